import type { Logger } from "pino";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import type { JobStore } from "../store/job-store.js";
import { JobCancelledError, LeaseLostError } from "./abort-reasons.js";
import type { Attempt } from "./attempt.js";

/**
 * Renews the leases of every job this worker runs with one statement per
 * tick, and acts on the answer: a job missing from it was lost (its handler
 * is aborted and nothing more is written for it); a job flagged
 * `cancel_requested` has its handler's signal aborted (when the cancel's
 * NOTIFY did not already: the worker's LISTEN connection is the fast path,
 * this the fallback). A job whose lease
 * could not be renewed in time (database unreachable) is treated as lost as
 * well: by then another worker may own it. A job whose row another
 * transaction held keeps its lease (and deadline) until the next tick.
 */
export class LeaseKeeper {
  private timer: NodeJS.Timeout | null = null;
  private renewing: Promise<void> | null = null;

  constructor(
    private readonly store: JobStore,
    private readonly running: ReadonlyMap<string, Attempt>,
    private readonly leaseMs: number,
    private readonly heartbeatMs: number,
    private readonly metrics: MetricRecorders,
    private readonly log: Logger,
    /** Told of each cancel a renewal found and aborted a handler for. */
    private readonly onCancelObserved: (running: Attempt) => void = () => {},
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.renewAll(), this.heartbeatMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Renew all held leases now (one tick). Overlapping ticks are skipped, not queued. */
  async renewAll(): Promise<void> {
    // Checked every tick, even while a renewal hangs on a dead connection.
    this.expireOverdue([...this.running.values()]);
    if (this.renewing) return this.renewing;
    // Not the ones just expired: their phase changes only once the executor runs, and a renewal now would revive a lease given up.
    const now = performance.now();
    this.renewing = this.renew([...this.running.values()].filter((r) => r.holdsLease && r.leaseDeadline > now)).finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }

  /** Renew one job's lease (ctx.heartbeat); false when it was lost, or its local deadline had passed (then nothing is sent). */
  async renewOne(job: Attempt): Promise<boolean> {
    if (job.leaseDeadline <= performance.now()) {
      this.expireOverdue([job]);
      return false;
    }
    await this.renew([job]);
    return !job.aborted || job.cancelObserved;
  }

  private async renew(jobs: Attempt[]): Promise<void> {
    if (jobs.length === 0) return;
    const sentAt = performance.now();
    let states;
    try {
      states = await this.store.jobHeartbeat(
        jobs.map((r) => ({ jobId: r.job.id, executionId: r.executionId })),
        this.leaseMs,
      );
    } catch (error) {
      this.metrics.databaseErrors.inc({ operation: "heartbeat" });
      this.log.warn({ err: (error as Error).message, jobs: jobs.length }, "lease renewal failed; will retry");
      this.expireOverdue(jobs);
      return;
    }
    const byExecution = new Map(states.map((state) => [state.executionId, state]));
    for (const running of jobs) {
      // Finished while the renewal was in flight: its row may have left 'running' legitimately.
      if (!running.holdsLease) continue;
      const state = byExecution.get(running.executionId);
      if (!state) {
        this.metrics.fencedWrites.inc({ operation: "heartbeat" });
        running.force({ kind: "lease_lost", reason: new LeaseLostError("the lease was lost: the job was reclaimed or finished elsewhere") });
        continue;
      }
      // A busy row (another transaction holds it) kept its lease as it was.
      if (state.renewed) running.leaseDeadline = sentAt + this.leaseMs;
      if (state.cancelRequested && running.observeCancel(new JobCancelledError())) this.onCancelObserved(running);
    }
  }

  private expireOverdue(jobs: Attempt[]): void {
    const now = performance.now();
    for (const running of jobs) {
      if (running.holdsLease && running.leaseDeadline <= now) {
        running.force({ kind: "lease_lost", reason: new LeaseLostError("the lease expired: it could not be renewed in time") });
      }
    }
  }
}
