import { CLAIM_LOCK_TIMEOUT_MS } from "../core/defaults.js";
import type { ClaimedJob } from "../core/model.js";
import type { DatabaseClock } from "./database-clock.js";
import type { Queryable } from "./db.js";
import { freshExecutionIds } from "./execution-ids.js";
import type { Queries } from "./queries.js";
import { rowToClaimedJob } from "./rows.js";
import { runQuery } from "./run-query.js";

/** One claim request, as the worker makes it. */
export interface ClaimRequest {
  workerId: string;
  limit: number;
  kinds: readonly string[];
  /** null: every queue. */
  queues: readonly string[] | null;
  leaseMs: number;
}

/**
 * The claims that honour queue limits and tenant caps (statements in
 * `sql/claims-limited.ts`, functions in `routines/job-claim-*.ts`). Each is one
 * statement that locks the cap's settings rows, then claims, so limits hold
 * however many workers compete and no client holds a cap's lock between
 * round trips. A claim that waits longer than `CLAIM_LOCK_TIMEOUT_MS` for
 * the lock fails with `isLockTimeout`.
 */
export class LimitedClaimStore {
  constructor(
    private readonly pool: Queryable,
    private readonly q: Queries,
    /** Makes the execution ids. */
    private readonly clock: DatabaseClock,
  ) {}

  /** Claim from one limited queue within its concurrency cap and rate window. */
  async jobClaimFromLimitedQueue(queue: string, request: ClaimRequest): Promise<ClaimedJob[]> {
    const { rows } = await runQuery(this.pool, this.q.jobClaimFromLimitedQueue, [
      request.workerId,
      request.limit,
      request.kinds,
      queue,
      request.leaseMs,
      freshExecutionIds(request.limit, this.clock.nowKnown()),
      CLAIM_LOCK_TIMEOUT_MS,
    ]);
    return rows.map(rowToClaimedJob);
  }

  /**
   * Claim from one key-limited queue, walking `walk` keys round-robin after
   * `afterKey` (the cursor; null: from the first key). Returns the jobs and
   * the cursor to pass next time: the last key claimed from in walk order
   * (the database's, so its collation's), the last key walked when none
   * was, or `afterKey` when no key had ready jobs.
   */
  async jobClaimByKey(
    queue: string,
    request: ClaimRequest,
    afterKey: string | null,
    walk: number,
  ): Promise<{ jobs: ClaimedJob[]; nextKey: string | null }> {
    const { rows } = await runQuery(this.pool, this.q.jobClaimByKey, [
      request.workerId,
      request.limit,
      request.kinds,
      queue,
      request.leaseMs,
      freshExecutionIds(request.limit, this.clock.nowKnown()),
      CLAIM_LOCK_TIMEOUT_MS,
      afterKey,
      walk,
    ]);
    // A row without an id only carries the cursor (nothing was claimed).
    const jobs = rows.filter((row) => row.id !== null).map(rowToClaimedJob);
    return { jobs, nextKey: rows.length > 0 ? (rows[0].next_key ?? afterKey) : afterKey };
  }

  /** Tenant-fair claim over unrestricted queues (fewest running first), within each tenant's cap. */
  async jobClaimFair(request: ClaimRequest): Promise<ClaimedJob[]> {
    // Every capped tenant's lock is always taken (an empty table costs one
    // index-less probe): a cap set a moment ago must hold even before this
    // worker's cached view knows it.
    const { rows } = await runQuery(this.pool, this.q.jobClaimFair, [
      request.workerId,
      request.limit,
      request.kinds,
      request.queues,
      request.leaseMs,
      freshExecutionIds(request.limit, this.clock.nowKnown()),
      CLAIM_LOCK_TIMEOUT_MS,
    ]);
    return rows.map(rowToClaimedJob);
  }
}

