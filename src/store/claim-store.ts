import { CLAIM_MIN_FRESH_IDS } from "../core/defaults.js";
import type { ClaimedJob } from "../core/model.js";
import { createCustomPlanPool, type Pool, type Queryable } from "./db.js";
import { freshExecutionIds } from "./execution-ids.js";
import { bindQueries, type BoundQuery } from "./queries.js";
import { rowToClaimedJob } from "./rows.js";
import { runQuery } from "./run-query.js";

/**
 * The worker's claims (`jobClaim`) on a connection of its own. The claim's
 * plan must be made for its values: a generic plan does not know the LIMIT
 * or the queue names, and read and sorted every ready job of a table never
 * analyzed, or walked a deep queue to reach a small one (queries.ts). Sent
 * unnamed on Conveyor's pool, it is parsed again at every call, 0.24 ms of a
 * 0.57 ms claim of one job (PostgreSQL 15), on every job's way from enqueue
 * to handler. Here it is prepared once and the session plans every call for
 * its values, as the whole pool did before only the hot statements were
 * prepared. The worker claims one statement at a time, so one connection is
 * enough; it is in addition to the pool's and the LISTEN connection.
 */
export class ClaimStore {
  readonly pool: Pool;
  private readonly claim: BoundQuery;
  /** Jobs the previous claim took: the next sends twice as many fresh execution ids (CLAIM_MIN_FRESH_IDS). */
  private lastClaimed = 0;

  constructor(base: Pool, schema: string) {
    this.pool = createCustomPlanPool(base, "conveyor-claims");
    this.claim = { ...bindQueries(schema).jobClaim, prepared: true };
  }

  async jobClaim(workerId: string, limit: number, kinds: readonly string[], queues: readonly string[] | null, leaseMs: number): Promise<ClaimedJob[]> {
    const ids = Math.min(limit, Math.max(CLAIM_MIN_FRESH_IDS, 2 * this.lastClaimed));
    const jobs = await runJobClaim(this.pool, this.claim, workerId, limit, kinds, queues, leaseMs, ids);
    this.lastClaimed = jobs.length;
    return jobs;
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

/**
 * Claim up to `limit` ready jobs with `claim` (sql/claims.ts jobClaim) on
 * `db`, sending `ids` fresh execution ids (the claim makes any more it needs).
 */
export async function runJobClaim(
  db: Queryable,
  claim: BoundQuery,
  workerId: string,
  limit: number,
  kinds: readonly string[],
  queues: readonly string[] | null,
  leaseMs: number,
  ids = limit,
): Promise<ClaimedJob[]> {
  const { rows } = await runQuery(db, claim, [workerId, limit, kinds, queues, leaseMs, freshExecutionIds(ids)]);
  return rows.map(rowToClaimedJob);
}
