import type { CronMissedPolicy, CronScheduleInfo } from "../core/cron.js";
import type { Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { runQuery } from "./run-query.js";

/** What a worker writes for one schedule it runs. */
export interface CronScheduleDefinitionRow {
  name: string;
  kind: string;
  cron: string;
  timezone: string;
  tenant: string;
  queue: string;
  priority: number;
  /** JSON text. */
  payload: string;
  missedPolicy: CronMissedPolicy;
  catchUpLimit: number;
  /** Used only when the row is new or its cron expression or time zone changed. */
  nextTickAt: Date | null;
}

/** Cron schedule statements (in `sql/cron.ts`). Each runs on the pool, or on `db` (a transaction) when given. */
export class CronStore {
  private readonly pool: Queryable;
  private readonly q: Queries;

  constructor(pool: Queryable, queries: Queries) {
    this.pool = pool;
    this.q = queries;
  }

  /** The database clock. */
  async cronNow(db?: Queryable): Promise<Date> {
    const { rows } = await runQuery(db ?? this.pool, this.q.cronNow, []);
    return rows[0].db_now;
  }

  /** Create or update a schedule's definition (see `cronScheduleUpsert` for what happens to its next tick). */
  async cronScheduleUpsert(row: CronScheduleDefinitionRow, db?: Queryable): Promise<void> {
    await runQuery(db ?? this.pool, this.q.cronScheduleUpsert, [
      row.name,
      row.kind,
      row.cron,
      row.timezone,
      row.tenant,
      row.queue,
      row.priority,
      row.payload,
      row.missedPolicy,
      row.catchUpLimit,
      row.nextTickAt,
    ]);
  }

  /** Lock the due schedules among `names` of `kinds` (call inside a transaction); returns them with the database clock. */
  async cronScheduleLockDue(names: readonly string[], kinds: readonly string[], db: Queryable): Promise<{ now: Date; due: CronScheduleInfo[] }> {
    const { rows } = await runQuery(db, this.q.cronScheduleLockDue, [names, kinds]);
    return { now: rows[0]?.db_now ?? (await this.cronNow(db)), due: rows.map(rowToSchedule) };
  }

  /** Advance a schedule past enqueued ticks; false when someone else moved it first. */
  async cronScheduleAdvance(name: string, readNextTickAt: Date | null, nextTickAt: Date | null, lastTickAt: Date | null, db: Queryable): Promise<boolean> {
    const { rows } = await runQuery(db, this.q.cronScheduleAdvance, [name, readNextTickAt, nextTickAt, lastTickAt]);
    return rows.length === 1;
  }

  /** The database clock and the soonest next tick among these schedules (null: none will fire). */
  async cronScheduleNextDue(names: readonly string[], kinds: readonly string[]): Promise<{ now: Date; nextTickAt: Date | null }> {
    const { rows } = await runQuery(this.pool, this.q.cronScheduleNextDue, [names, kinds]);
    return { now: rows[0].db_now, nextTickAt: rows[0].next_tick_at };
  }

  /** Every schedule (of one tenant, unless null), by name. */
  async cronScheduleList(tenant: string | null): Promise<CronScheduleInfo[]> {
    const { rows } = await runQuery(this.pool, this.q.cronScheduleList, [tenant]);
    return rows.map(rowToSchedule);
  }
}

function rowToSchedule(row: any): CronScheduleInfo {
  return {
    name: row.name,
    kind: row.kind,
    cron: row.cron,
    timezone: row.timezone,
    tenant: row.tenant,
    queue: row.queue,
    priority: row.priority,
    payload: row.payload,
    missed: { policy: row.missed_policy, limit: row.catch_up_limit },
    nextTickAt: row.next_tick_at,
    lastTickAt: row.last_tick_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
