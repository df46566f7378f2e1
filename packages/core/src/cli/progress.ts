import { PROGRESS_RATE_MIN_MS } from "../core/defaults.js";

/**
 * Progress for long CLI operations, on stderr so stdout stays the result.
 * On a terminal: one bar redrawn in place at most 10 times a second. Piped
 * (CI, scripts): a plain line at each further 10%, so logs stay short.
 */
export class ProgressBar {
  private readonly started = Date.now();
  private lastDraw = 0;
  private lastTenth = -1;
  private readonly tty: boolean;

  constructor(
    private readonly label: string,
    /** Total work units (bytes of a file), or null when unknown (stdin). */
    private readonly total: number | null,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.tty = Boolean(stream.isTTY);
  }

  /** `done` units of `total` finished; `count` is what people count (jobs). */
  update(done: number, count: number): void {
    const now = Date.now();
    if (this.tty) {
      if (now - this.lastDraw < 100) return;
      this.lastDraw = now;
      this.stream.write(`\r${this.line(done, count)}\u001b[K`);
      return;
    }
    if (this.total === null || this.total === 0) return;
    const tenth = Math.floor((done / this.total) * 10);
    if (tenth > this.lastTenth && tenth < 10) {
      this.lastTenth = tenth;
      if (tenth > 0) this.stream.write(`${this.line(done, count)}\n`);
    }
  }

  /** The final state; ends the terminal line. */
  finish(done: number, count: number): void {
    this.stream.write(this.tty ? `\r${this.line(done, count)}\u001b[K\n` : `${this.line(done, count)}\n`);
  }

  /** Clear the bar before an error message. */
  abandon(): void {
    if (this.tty) this.stream.write("\r\u001b[K");
  }

  /** The bar's text; the rate only once `PROGRESS_RATE_MIN_MS` (1 s) has passed, when it means something. */
  line(done: number, count: number): string {
    const elapsedMs = Date.now() - this.started;
    const rate = elapsedMs >= PROGRESS_RATE_MIN_MS ? ` ${Math.round(count / (elapsedMs / 1000)).toLocaleString("en-US")}/s` : "";
    const jobs = `${count.toLocaleString("en-US")} jobs`;
    if (this.total === null || this.total === 0) return `${this.label} ${jobs}${rate}`;
    const fraction = Math.min(1, done / this.total);
    const width = 30;
    const filled = Math.round(fraction * width);
    return `${this.label} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}% ${jobs}${rate}`;
  }
}
