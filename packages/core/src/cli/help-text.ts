/**
 * An option's description followed by the default the library applies when
 * the option is not given, in commander's own `(default: …)` form. The
 * option itself stays unset, so the library's resolve step (which may derive
 * one default from another) decides; the text only shows its constant.
 */
export function withDefault(description: string, shown: string | number): string {
  return `${description} (default: ${shown})`;
}

const BYTE_UNITS = [
  ["GiB", 1024 ** 3],
  ["MiB", 1024 ** 2],
  ["KiB", 1024],
] as const;

/** A byte count as a number option takes it, with its exact binary unit when it has one: `1048576, 1 MiB`. */
export function bytesText(bytes: number): string {
  const unit = BYTE_UNITS.find(([, size]) => bytes > 0 && bytes % size === 0);
  return unit ? `${bytes}, ${bytes / unit[1]} ${unit[0]}` : String(bytes);
}
