import { ConflictError } from "../core/errors.js";
import { encodeJson } from "../core/json.js";
import type { Queryable } from "../store/db.js";
import type { HandlerStore } from "../store/handler-store.js";
import { translatePgError } from "../store/pg-errors.js";
import { rollback } from "../store/transaction.js";
import { LeaseLostError } from "./abort-reasons.js";
import type { Attempt } from "./attempt.js";

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
  /** A transaction of this attempt is open (one at a time). Whether one committed is the attempt's phase. */
  private open = false;
  /** The completion statement and COMMIT, while they are on their way. */
  private finishing: Promise<unknown> | null = null;

  constructor(
    private readonly store: HandlerStore,
    private readonly running: Attempt,
    /** Write pending progress before the completion (fenced writes after it would match nothing). */
    private readonly beforeComplete: () => Promise<void>,
  ) {}

  /** Wait for a completion already sent (a few round trips), not for a callback still running. */
  async settled(): Promise<void> {
    await this.finishing?.catch(() => {});
  }

  async run<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    if (this.open) throw new ConflictError("ctx.transaction: this attempt already has a transaction open; await it first");
    if (this.running.committed) {
      throw new ConflictError("ctx.transaction: this attempt already completed the job in a transaction; a job completes once");
    }
    const signal = this.running.signal;
    signal.throwIfAborted();
    this.open = true;
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
      this.open = false;
    }
  }

  private async complete(client: Queryable, json: string | null): Promise<void> {
    if (this.running.leaseDeadline <= performance.now()) {
      // Past the lease's local deadline another worker may own the job: commit nothing.
      const lost = new LeaseLostError("the transaction was rolled back: this attempt's lease could have expired (its deadline passed before the completion)");
      if (this.running.holdsLease) this.running.force({ kind: "lease_lost", reason: lost });
      throw lost;
    }
    const written = await this.store.jobCompleteInTransaction(client, this.running.job.id, this.running.executionId, json, this.running.keepSucceeded);
    if (!written) {
      const lost = new LeaseLostError(
        "the transaction was rolled back: this attempt no longer owns the job (its lease expired and it was reclaimed, or it finished elsewhere)",
      );
      // As a failed heartbeat would: abort the handler and write nothing more for this attempt.
      if (this.running.holdsLease) this.running.force({ kind: "lease_lost", reason: lost });
      throw lost;
    }
    // The job row is locked by us until COMMIT. From here the job leaves
    // `running` in the database, so the lease keeper must stop renewing it
    // and must not take the missing row for a lost lease.
    this.running.beginCommit();
    try {
      this.running.signal.throwIfAborted();
      await translated(() => client.query("COMMIT"));
      // Set here, not after the caller resumes, so whoever awaits `settled()` sees it.
      this.running.commitSucceeded();
    } catch (error) {
      this.running.commitFailed();
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
