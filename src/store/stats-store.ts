import type { Queryable } from "./db.js";
import { runQuery } from "./run-query.js";
import type { Queries } from "./queries.js";

/** One minute of activity. */
export interface ThroughputMinute {
  /** Start of the minute (database clock). */
  minute: Date;
  /** Jobs created in that minute. */
  enqueued: number;
  /** Attempts that ended `succeeded` in that minute. */
  succeeded: number;
  /** Attempts that ended `failed`, `timeout` or `lease_expired` in that minute. */
  failed: number;
}

/** Activity over time (statements in `sql/stats.ts`). */
export class StatsStore {
  private readonly pool: Queryable;
  private readonly q: Queries;

  constructor(pool: Queryable, queries: Queries) {
    this.pool = pool;
    this.q = queries;
  }

  /** The last 60 minutes, oldest first, zero-filled; `tenant` null counts every tenant. */
  async statsThroughputByMinute(tenant: string | null): Promise<ThroughputMinute[]> {
    // Unprepared: a generic plan would ignore whether the tenant filter is set.
    const { rows } = await runQuery(this.pool, this.q.statsThroughputByMinute, [tenant]);
    return rows.map((row) => ({ minute: row.minute, enqueued: row.enqueued, succeeded: row.succeeded, failed: row.failed }));
  }
}
