import { InvalidArgumentError } from "commander";

export function positiveInt(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed < 1) {
    throw new InvalidArgumentError(`expected a whole number >= 1, got "${value}"`);
  }
  return parsed;
}

export function port(value: string): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed > 65535) throw new InvalidArgumentError(`expected a port 0-65535, got "${value}"`);
  return parsed;
}

export function commaList(value: string): string[] {
  const items = value.split(",").map((item) => item.trim()).filter(Boolean);
  if (items.length === 0) throw new InvalidArgumentError("expected a comma-separated list, got nothing");
  return items;
}
