import { ConflictError } from "../core/errors.js";
import { encodeJson } from "../core/json.js";
import type { Queryable } from "../store/db.js";
import type { HandlerStore } from "../store/handler-store.js";
import { translatePgError } from "../store/pg-errors.js";
import { rollback } from "../store/transaction.js";
import { LeaseLostError } from "./abort-reasons.js";
import type { RunningJob } from "./running-job.js";

/**
 * `ctx.transaction()` for one attempt: BEGIN on a connection of Conveyor's
 * pool, run the handler's callback, complete the job on the same connection
 * with a statement fenced on the execution id, COMMIT. When the fence
 * matches nothing (the lease expired and the job was reclaimed, maybe run
 * by another worker) the transaction is rolled back and `LeaseLostError`
 * thrown: a stale owner's writes never commit. Lock order: see
 * src/store/sql/transactional-completion.ts.
 */
export class AttemptTransaction {
  private state: "idle" | "open" | "committed" = "idle";
  /** The completion statement and COMMIT, while they are on their way. */
  private finishing: Promise<unknown> | null = null;

  constructor(
    private readonly store: HandlerStore,
    private readonly running: RunningJob,
    /** Write pending progress before the completion (fenced writes after it would match nothing). */
    private readonly beforeComplete: () => Promise<void>,
  ) {}

  /** True once a transaction committed: the job is succeeded and the executor must write no outcome. */
  get committed(): boolean {
    return this.state === "committed";
  }

  /** Wait for a completion already sent (a few round trips), not for a callback still running. */
  async settled(): Promise<void> {
    await this.finishing?.catch(() => {});
  }

  async run<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    if (this.state === "open") throw new ConflictError("ctx.transaction: this attempt already has a transaction open; await it first");
    if (this.state === "committed") {
      throw new ConflictError("ctx.transaction: this attempt already completed the job in a transaction; a job completes once");
    }
    const signal = this.running.signal;
    signal.throwIfAborted();
    this.state = "open";
    try {
      const client = await this.store.connect();
      let broken: Error | undefined;
      try {
        await translated(() => client.query("BEGIN"));
        let result: T;
        try {
          result = await work(client);
          // Aborted while the callback ran (cancel, timeout, lease lost,
          // shutdown): the attempt is over or ending; its writes must not land.
          signal.throwIfAborted();
          const json = result === undefined ? null : encodeJson(result, "result");
          await this.beforeComplete();
          this.finishing = this.complete(client, json);
          await this.finishing;
        } catch (error) {
          broken = await rollback(client, error);
          throw error;
        }
        return result;
      } finally {
        client.release(broken);
      }
    } finally {
      // A failed or refused transaction leaves the job running and ours: the handler may try again.
      if (this.state === "open") this.state = "idle";
    }
  }

  private async complete(client: Queryable, json: string | null): Promise<void> {
    const written = await this.store.jobCompleteInTransaction(client, this.running.job.id, this.running.executionId, json);
    if (!written) {
      const lost = new LeaseLostError(
        "the transaction was rolled back: this attempt no longer owns the job (its lease expired and it was reclaimed, or it finished elsewhere)",
      );
      // As a failed heartbeat would: abort the handler and write nothing more for this attempt.
      if (this.running.phase === "running") this.running.force({ kind: "lease_lost", reason: lost });
      throw lost;
    }
    // The job row is locked by us until COMMIT. From here the job leaves
    // `running` in the database, so the lease keeper must stop renewing it
    // and must not take the missing row for a lost lease.
    const phase = this.running.phase;
    this.running.phase = "writing";
    try {
      this.running.signal.throwIfAborted();
      await translated(() => client.query("COMMIT"));
      // Set here, not after the caller resumes, so whoever awaits `settled()` sees it.
      this.state = "committed";
    } catch (error) {
      this.running.phase = phase;
      throw error;
    }
  }
}

async function translated<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw translatePgError(error);
  }
}
