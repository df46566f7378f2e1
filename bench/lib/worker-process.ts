import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { FromChild, ToChild } from "../worker-child.js";
import type { SystemName, WorkerVariant } from "../systems/system.js";
import { now, withTimeout } from "./clock.js";

/** A wait that ran out of time (as opposed to a worker that failed). */
export class DeadlineError extends Error {}

const CHILD = fileURLToPath(new URL("../worker-child.js", import.meta.url));

/** Extra node flags for worker children, e.g. `--cpu-prof --cpu-prof-dir=…` (BENCH_WORKER_NODE_OPTIONS). */
const CHILD_FLAGS = (process.env.BENCH_WORKER_NODE_OPTIONS ?? "").split(" ").filter(Boolean);

/**
 * One worker child process, seen from the bench process. Times the child
 * reports are on its own clock; `toLocal` turns them into this process's
 * clock using the offset `calibrate` measured.
 */
export class WorkerProcess {
  private readonly child: ChildProcess;
  private readonly waiters = new Map<string, Array<(message: FromChild) => void>>();
  private readonly milestones = new Map<number, number>();
  private failure: Error | null = null;
  private offset = 0;
  private clockId = 0;

  private constructor(system: SystemName, variant: WorkerVariant, target: string, nodeFlags: readonly string[]) {
    this.child = spawn(process.execPath, [...nodeFlags, CHILD, system, variant, target], {
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    this.child.on("message", (message: FromChild) => this.receive(message));
    this.child.on("exit", (code, signal) => {
      if (code !== 0) this.fail(new Error(`${system} worker exited (${signal ?? `code ${code}`})`));
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Spawn a child and wait until it has loaded its system's library. */
  static async spawn(system: SystemName, variant: WorkerVariant, target: string, nodeFlags: readonly string[] = CHILD_FLAGS): Promise<WorkerProcess> {
    const worker = new WorkerProcess(system, variant, target, nodeFlags);
    try {
      await worker.next("loaded", 30_000);
      await worker.calibrate();
    } catch (error) {
      worker.kill();
      throw error;
    }
    return worker;
  }

  /**
   * Measure the child's clock offset: ping it a few times and keep the
   * exchange with the shortest round trip (its midpoint is the best guess).
   */
  private async calibrate(): Promise<void> {
    let best = { rtt: Infinity, offset: 0 };
    for (let i = 0; i < 20; i++) {
      const id = ++this.clockId;
      const sent = now();
      const reply = this.next("clock", 5_000);
      this.send({ type: "clock", id });
      const { t } = (await reply) as Extract<FromChild, { type: "clock" }>;
      const received = now();
      if (received - sent < best.rtt) best = { rtt: received - sent, offset: t - (sent + received) / 2 };
    }
    this.offset = best.offset;
  }

  /** A time the child reported, on this process's clock. */
  toLocal(childTime: number): number {
    return childTime - this.offset;
  }

  /** Start the worker; the child reports when it has handled each count in `milestones`. */
  async start(options: { milestones?: number[]; recordStarts?: boolean; rssEvery?: number } = {}): Promise<void> {
    const started = this.next("started", 60_000);
    this.send({ type: "start", milestones: options.milestones ?? [], recordStarts: options.recordStarts ?? false, rssEvery: options.rssEvery ?? 0 });
    await started;
  }

  /** When (local clock) the handler had been called `count` times; rejects after `timeoutMs`. */
  async milestone(count: number, timeoutMs: number): Promise<number> {
    const deadline = now() + timeoutMs;
    while (!this.milestones.has(count)) {
      if (this.failure) throw this.failure;
      const left = deadline - now();
      if (left <= 0) throw new DeadlineError(`milestone ${count} not reached within ${Math.round(timeoutMs)} ms`);
      await this.next("milestone", left).catch((error: unknown) => {
        if (this.failure) throw this.failure;
        if (!(error instanceof DeadlineError)) throw error;
      });
    }
    return this.toLocal(this.milestones.get(count)!);
  }

  /** Handler calls so far, and when (local clock). */
  async progress(): Promise<{ count: number; t: number }> {
    const reply = this.next("progress", 10_000);
    this.send({ type: "progress" });
    const { count, t } = (await reply) as Extract<FromChild, { type: "progress" }>;
    return { count, t: this.toLocal(t) };
  }

  /** Stop the worker gracefully; returns the handler count, peak RSS, recorded start times (local clock) and RSS samples (count, kB). */
  async stop(): Promise<{ count: number; peakRssMb: number; cpuMs: number; starts: Array<[number, number]>; rss: Array<[number, number]> }> {
    try {
      const reply = this.next("stopped", 60_000);
      this.send({ type: "stop" });
      const { count, maxRssKb, cpuMs, starts, rss } = (await reply) as Extract<FromChild, { type: "stopped" }>;
      await withTimeout(
        new Promise<void>((resolve) => (this.child.exitCode !== null ? resolve() : this.child.once("exit", () => resolve()))),
        10_000,
        "worker child did not exit",
      ).catch(() => this.kill());
      return { count, peakRssMb: maxRssKb / 1024, cpuMs, starts: starts.map(([n, t]) => [n, this.toLocal(t)]), rss };
    } catch (error) {
      this.kill();
      throw error;
    }
  }

  /** End the child now (by its PID). */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
  }

  private send(message: ToChild): void {
    if (this.failure) throw this.failure;
    this.child.send(message);
  }

  private receive(message: FromChild): void {
    if (message.type === "milestone") this.milestones.set(message.count, message.t);
    if (message.type === "error") this.fail(new Error(`worker child: ${message.message}`));
    const waiting = this.waiters.get(message.type);
    if (waiting && waiting.length > 0) waiting.shift()!(message);
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const list of this.waiters.values()) list.splice(0).forEach((resolve) => resolve({ type: "error", message: error.message }));
  }

  private next(type: FromChild["type"], timeoutMs: number): Promise<FromChild> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise<FromChild>((resolve, reject) => {
      const list = this.waiters.get(type) ?? [];
      this.waiters.set(type, list);
      const timer = setTimeout(() => {
        const index = list.indexOf(waiter);
        if (index >= 0) list.splice(index, 1);
        reject(new DeadlineError(`no "${type}" from the worker child within ${Math.round(timeoutMs)} ms`));
      }, timeoutMs);
      const waiter = (message: FromChild) => {
        clearTimeout(timer);
        if (message.type === "error") reject(new Error(message.message));
        else resolve(message);
      };
      list.push(waiter);
    });
  }
}
