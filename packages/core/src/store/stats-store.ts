import { boundedRead } from "./bounded-read.js";
import type { Pool } from "./db.js";
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

/** Attempts that ended in a window, per queue or per kind. */
export interface EndedAttempts {
  /** The queue or kind. */
  name: string;
  succeeded: number;
  failed: number;
}

/** Failed attempts of a window with one error message. */
export interface ErrorCount {
  message: string;
  count: number;
  kinds: string[];
  lastSeenAt: Date;
}

/** What statsRecentActivity read. */
export interface RecentActivity {
  queues: EndedAttempts[];
  kinds: EndedAttempts[];
  /** Most frequent first. */
  errors: ErrorCount[];
}

/** Activity over time (statements in `sql/stats.ts`). */
export class StatsStore {
  private readonly pool: Pool;
  private readonly q: Queries;

  constructor(pool: Pool, queries: Queries) {
    this.pool = pool;
    this.q = queries;
  }

  /** The last 60 minutes, oldest first, zero-filled; `tenant` null counts every tenant, `queue` null every queue. */
  async statsThroughputByMinute(tenant: string | null, queue: string | null = null): Promise<ThroughputMinute[]> {
    // Unprepared: a generic plan would ignore whether the tenant and queue filters are set.
    const { rows } = await runQuery(this.pool, this.q.statsThroughputByMinute, [tenant, queue]);
    return rows.map((row) => ({ minute: row.minute, enqueued: row.enqueued, succeeded: row.succeeded, failed: row.failed }));
  }

  /** Attempts that ended in the last `windowMs`, per queue and per kind, and the `errorLimit` most frequent error messages; under `timeoutMs`. */
  async statsRecentActivity(tenant: string | null, windowMs: number, errorLimit: number, timeoutMs: number): Promise<RecentActivity> {
    const { rows } = await boundedRead(this.pool, timeoutMs, (db) => runQuery(db, this.q.statsRecentActivity, [tenant, windowMs, errorLimit]));
    const activity: RecentActivity = { queues: [], kinds: [], errors: [] };
    for (const row of rows) {
      if (row.part === "error") {
        activity.errors.push({ message: row.name, count: row.failed, kinds: row.kinds, lastSeenAt: row.last_seen_at });
      } else {
        (row.part === "queue" ? activity.queues : activity.kinds).push({ name: row.name, succeeded: row.succeeded, failed: row.failed });
      }
    }
    activity.errors.sort((a, b) => b.count - a.count || b.lastSeenAt.getTime() - a.lastSeenAt.getTime());
    return activity;
  }
}
