import type { KeyHeldBack, KeyLimitSettings, KeyLimitSource, KeyLimits, KeyLoad } from "../core/key-limits.js";
import type { Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { runQuery } from "./run-query.js";

/** A key's row as keyStatusGet reads it; the client turns it into a KeyStatus. */
export interface KeyStatusRow {
  limits: KeyLimits;
  source: KeyLimitSource;
  running: number;
  ready: number;
  scheduled: number;
  windowStartedAt: Date | null;
  windowCount: number;
  paused: boolean;
  /** The database's now(), which the window is measured against. */
  now: Date;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function limitsOf(row: Record<string, any>): KeyLimits {
  return {
    concurrency: row.concurrency_limit,
    rateLimit: row.rate_limit === null ? null : { count: row.rate_limit, intervalMs: row.rate_interval_ms },
  };
}

function rowToKeyLimitSettings(row: Record<string, any>): KeyLimitSettings {
  return { queue: row.queue, key: row.limit_key === "" ? null : row.limit_key, ...limitsOf(row), updatedAt: row.updated_at };
}

/** Limits per key (statements in `sql/key-limits.ts`). Inputs are validated by the caller. */
export class KeyLimitStore {
  /** The channel workers LISTEN on (routines/jobs-notify-ready.ts). */
  private readonly channel: string;

  constructor(
    private readonly pool: Queryable,
    private readonly q: Queries,
    schema: string,
  ) {
    this.channel = `${schema}:jobs`;
  }

  /** Set a queue's default (`key` null) or one key's limits; a field whose `set` is false keeps its value. */
  async keyLimitsSet(
    queue: string,
    key: string | null,
    concurrency: { set: boolean; value: number | null },
    rate: { set: boolean; count: number | null; intervalMs: number | null },
  ): Promise<KeyLimitSettings> {
    const { rows } = await runQuery(this.pool, this.q.keyLimitsSet, [
      queue, key ?? "", concurrency.set, concurrency.value, rate.set, rate.count, rate.intervalMs, this.channel,
    ]);
    return rowToKeyLimitSettings(rows[0]);
  }

  /** Delete one key's override, or (`key` null) every key limit of the queue; how many rows went. */
  async keyLimitsDelete(queue: string, key: string | null): Promise<number> {
    const { rows } = await runQuery(this.pool, this.q.keyLimitsDelete, [queue, key, this.channel]);
    return rows[0].deleted;
  }

  /** The key limits of one queue, or of all (`queue` null), each queue's default first. */
  async keyLimitsList(queue: string | null): Promise<KeyLimitSettings[]> {
    const { rows } = await runQuery(this.pool, this.q.keyLimitsList, [queue]);
    return rows.map(rowToKeyLimitSettings);
  }

  /** What one key of a queue is doing now. */
  async keyStatusGet(queue: string, key: string): Promise<KeyStatusRow> {
    const { rows } = await runQuery(this.pool, this.q.keyStatusGet, [queue, key]);
    const row = rows[0];
    return {
      limits: limitsOf(row),
      source: row.source,
      running: row.running,
      ready: row.ready,
      scheduled: row.scheduled,
      windowStartedAt: row.window_started_at,
      windowCount: row.window_count ?? 0,
      paused: row.paused,
      now: row.now,
    };
  }

  /** The `limit` keys of a queue with the most jobs waiting. */
  async keyTopByWaiting(queue: string, limit: number): Promise<KeyLoad[]> {
    const { rows } = await runQuery(this.pool, this.q.keyTopByWaiting, [queue, limit]);
    return rows.map((row) => ({ key: row.limit_key, waiting: row.waiting, running: row.running, limits: limitsOf(row), source: row.source }));
  }

  /** Keys held back by their limits right now, with their ready jobs (most first within each queue). */
  async keyHeldBackList(): Promise<KeyHeldBack[]> {
    const { rows } = await runQuery(this.pool, this.q.keyHeldBackList, []);
    return rows.map((row) => ({ queue: row.queue, key: row.limit_key, heldJobs: row.held_jobs }));
  }
}
