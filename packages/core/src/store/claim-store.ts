import { CLAIM_CURSOR_RESET_MS, CLAIM_HEAD_COST_FACTOR, CLAIM_MIN_FRESH_IDS } from "../core/defaults.js";
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
 *
 * Claims start after the cursor, the last job claimed (sql/claims.ts
 * explains why). A claim from the head of the ready index comes every
 * CLAIM_CURSOR_RESET_MS, or less often when one is slow (a held-back VACUUM
 * leaves it every claimed job to step over): then every CLAIM_HEAD_COST_FACTOR
 * times its last duration, so it never takes more than a small share of the
 * worker's claiming, and the claims between stay as fast as with a clean index.
 */
export class ClaimStore {
  readonly pool: Pool;
  private readonly claim: BoundQuery;
  private readonly claimAfter: BoundQuery;
  /** The claim-order key of the last job claimed, while claims may start after it. */
  private cursor: [number, string, string] | null = null;
  /** performance.now() when the next claim from the head of the ready index is due. */
  private headClaimDue = Number.NEGATIVE_INFINITY;
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
    const { jobClaim, jobClaimAfter, jobClaimAllQueues, jobClaimAllQueuesAfter } = queries;
    const allQueues = queues === null;
    const prepared = !pooled;
    this.claim = { ...(allQueues ? jobClaimAllQueues : jobClaim), prepared };
    this.claimAfter = { ...(allQueues ? jobClaimAllQueuesAfter : jobClaimAfter), prepared };
    this.pool = pooled
      ? poolOf({ ...connection, application_name: "conveyor-claims" }, 1)
      : createPlanModePool(connection, "conveyor-claims", allQueues ? "force_generic_plan" : "force_custom_plan");
  }

  async jobClaim(workerId: string, limit: number, kinds: readonly string[], queues: readonly string[] | null, leaseMs: number): Promise<ClaimedJob[]> {
    const started = performance.now();
    const after = this.cursor !== null && started < this.headClaimDue ? this.cursor : null;
    const ids = freshExecutionIds(Math.min(limit, this.nextIds), this.clock.nowKnown());
    const values = [workerId, limit, kinds, queues, leaseMs, ids, ...(after ?? [])];
    const { rows } = await runQuery(this.pool, after ? this.claimAfter : this.claim, values);
    if (after === null) {
      const tookMs = performance.now() - started;
      this.headClaimDue = started + Math.max(CLAIM_CURSOR_RESET_MS, CLAIM_HEAD_COST_FACTOR * tookMs);
    }
    const jobs = rows.map(rowToClaimedJob);
    const last = rows.at(-1);
    // Jobs ready later land past the last one claimed; those that land before it wait for the next claim from the head.
    if (last) this.cursor = [last.cursor_priority, last.cursor_run_at, last.cursor_id];
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
