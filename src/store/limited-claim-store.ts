import type { ClaimedJob } from "../core/model.js";
import type { Pool } from "./db.js";
import { freshExecutionIds } from "./execution-ids.js";
import { bindQueries, type Queries } from "./queries.js";
import { rowToClaimedJob } from "./rows.js";
import { runQuery } from "./run-query.js";
import { withTransaction } from "./transaction.js";

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
 * The claims that honour queue limits and tenant fairness (statements in
 * `sql/claims-limited.ts`). Each runs as a short transaction: lock the
 * settings rows, then claim, so limits hold however many workers compete.
 */
export class LimitedClaimStore {
  private readonly q: Queries;

  constructor(
    private readonly pool: Pool,
    schema: string,
  ) {
    this.q = bindQueries(schema);
  }

  /** Claim from one limited queue within its concurrency cap and rate window. */
  claimFromLimitedQueue(queue: string, request: ClaimRequest): Promise<ClaimedJob[]> {
    return withTransaction(this.pool, async (client) => {
      await runQuery(client, this.q.queueSettingsLock, [queue]);
      const { rows } = await runQuery(client, this.q.jobClaimFromLimitedQueue, [
        request.workerId,
        request.limit,
        request.kinds,
        queue,
        request.leaseMs,
        freshExecutionIds(request.limit),
      ]);
      return rows.map(rowToClaimedJob);
    });
  }

  /** Tenant-fair claim over unrestricted queues (fewest running first), within each tenant's cap. */
  claimFair(request: ClaimRequest): Promise<ClaimedJob[]> {
    return withTransaction(this.pool, async (client) => {
      // Always taken (an empty table costs one index-less probe): a cap set a
      // moment ago must hold even before this worker's cached view knows it.
      await runQuery(client, this.q.tenantSettingsLockCapped, []);
      const { rows } = await runQuery(client, this.q.jobClaimFair, [
        request.workerId,
        request.limit,
        request.kinds,
        request.queues,
        request.leaseMs,
        freshExecutionIds(request.limit),
      ]);
      return rows.map(rowToClaimedJob);
    });
  }
}
