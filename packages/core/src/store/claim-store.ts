import { CLAIM_MIN_FRESH_IDS } from "../core/defaults.js";
import type { ClaimedJob } from "../core/model.js";
import type { DatabaseClock } from "./database-clock.js";
import { type ConnectionConfig, createPlanModePool, type Pool, poolOf, type Queryable } from "./db.js";
import { freshExecutionIds } from "./execution-ids.js";
import type { BoundQuery, Queries } from "./queries.js";
import { rowToClaimedJob } from "./rows.js";
import { runQuery } from "./run-query.js";

/**
 * The worker's claims on a connection of its own, each prepared once. A
 * worker over every queue claims with jobClaimAllQueues, whose plan does not
 * depend on its values (sql/claims.ts): its session plans once
 * (force_generic_plan), which spares every claim its planning, 0.3-0.7 ms of
 * an idle worker's claim of one job. A worker bound to named queues claims
 * with jobClaim, whose plan must be made for its values: a plan made without
 * them does not know the LIMIT or the queue names, and walked a deep queue to
 * reach a small one (queries.ts); its session plans every call
 * (force_custom_plan). Sent unnamed on Conveyor's pool, that claim would be
 * parsed again at every call too, 0.24 ms of a 0.57 ms claim. The worker
 * claims one statement at a time, so one connection is enough; it is in
 * addition to the pool's and the LISTEN connection.
 */
export class ClaimStore {
  readonly pool: Pool;
  private readonly claim: BoundQuery;
  /** Fresh execution ids the next claim sends, at most its limit (see jobClaim). */
  private nextIds = Number.POSITIVE_INFINITY;

  /**
   * `connection`: how the client's connections are made (its own connection
   * is made the same way). `queues`: the worker's, fixed for its life; null
   * for every queue. `clock` makes the execution ids.
   */
  constructor(
    connection: ConnectionConfig,
    queries: Queries,
    queues: readonly string[] | null,
    private readonly clock: DatabaseClock,
    /** Behind a pooler in transaction mode: no session to set a plan mode on, nothing prepared; each claim is planned for its values. */
    pooled = false,
  ) {
    const { jobClaim, jobClaimAllQueues } = queries;
    const allQueues = queues === null;
    if (pooled) {
      this.pool = poolOf({ ...connection, application_name: "conveyor-claims" }, 1);
      this.claim = { ...(allQueues ? jobClaimAllQueues : jobClaim), prepared: false };
      return;
    }
    this.pool = createPlanModePool(connection, "conveyor-claims", allQueues ? "force_generic_plan" : "force_custom_plan");
    this.claim = { ...(allQueues ? jobClaimAllQueues : jobClaim), prepared: true };
  }

  async jobClaim(workerId: string, limit: number, kinds: readonly string[], queues: readonly string[] | null, leaseMs: number): Promise<ClaimedJob[]> {
    const jobs = await runJobClaim(this.pool, this.claim, workerId, limit, kinds, queues, leaseMs, this.clock.nowKnown(), Math.min(limit, this.nextIds));
    // All it asked for: more may be waiting, so the next claim sends a full set.
    // Fewer: the ready jobs ran out, so the next sends ids for twice as many as this one took.
    this.nextIds = jobs.length === limit ? Number.POSITIVE_INFINITY : Math.max(CLAIM_MIN_FRESH_IDS, 2 * jobs.length);
    return jobs;
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/**
 * Claim up to `limit` ready jobs with `claim` (sql/claims.ts jobClaim) on
 * `db`, sending `ids` fresh execution ids made at `nowMs` (the claim makes
 * any more it needs).
 */
export async function runJobClaim(
  db: Queryable,
  claim: BoundQuery,
  workerId: string,
  limit: number,
  kinds: readonly string[],
  queues: readonly string[] | null,
  leaseMs: number,
  nowMs: number,
  ids = limit,
): Promise<ClaimedJob[]> {
  const { rows } = await runQuery(db, claim, [workerId, limit, kinds, queues, leaseMs, freshExecutionIds(ids, nowMs)]);
  return rows.map(rowToClaimedJob);
}
