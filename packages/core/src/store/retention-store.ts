import type { Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { runQuery } from "./run-query.js";

/** Retention deletes and the days of history they drop by (statements in `sql/retention.ts`); each call is one short statement. */
export class RetentionStore {
  private readonly pool: Queryable;
  private readonly q: Queries;

  constructor(pool: Queryable, queries: Queries) {
    this.pool = pool;
    this.q = queries;
  }

  /**
   * Make the missing day partitions of job_history for today and `days`
   * ahead (the worker's upkeep); returns how many were made, 0 when
   * another extender holds the lock and is making them.
   */
  async historyExtend(days: number): Promise<number> {
    const { rows } = await runQuery(this.pool, this.q.historyExtend, [days]);
    return rows[0].made;
  }

  /**
   * Drop every day of history that ended more than `olderThanMs` ago and
   * holds no job of the kinds `kept`, with its jobs' records: detach (a
   * moment's lock on job_history, waited for at most `lockTimeoutMs`), then
   * drop each detached day in a statement of its own. Returns how many
   * jobs the dropped days held.
   */
  async historyDropBefore(olderThanMs: number, kept: readonly string[], lockTimeoutMs: number): Promise<number> {
    await runQuery(this.pool, this.q.historyDetach, [olderThanMs, kept, lockTimeoutMs]);
    const { rows } = await runQuery(this.pool, this.q.historyDetached, []);
    let dropped = 0;
    for (const { name } of rows) {
      const result = await runQuery(this.pool, this.q.historyDrop, [name]);
      dropped += result.rows[0].count;
    }
    return dropped;
  }

  /** Delete up to `limit` succeeded/cancelled jobs finished more than `olderThanMs` ago, but none of the kinds `except`; returns how many. */
  async jobPruneFinished(olderThanMs: number, limit: number, except: readonly string[] = []): Promise<number> {
    const { rows } = await runQuery(this.pool, this.q.jobPruneFinished, [olderThanMs, limit, except]);
    return rows[0].count;
  }

  /** Delete up to `limit` succeeded/cancelled jobs of `kind` finished more than `olderThanMs` ago; returns how many. */
  async jobPruneFinishedOfKind(olderThanMs: number, limit: number, kind: string): Promise<number> {
    const { rows } = await runQuery(this.pool, this.q.jobPruneFinishedOfKind, [olderThanMs, limit, kind]);
    return rows[0].count;
  }

  /** Delete up to `limit` events sent more than `olderThanMs` ago; returns how many. */
  async eventPrune(olderThanMs: number, limit: number): Promise<number> {
    const { rows } = await runQuery(this.pool, this.q.eventPrune, [olderThanMs, limit]);
    return rows[0].count;
  }

  /** Delete up to `limit` flows older than `olderThanMs` whose jobs are all gone; returns how many. */
  async flowPruneEmpty(olderThanMs: number, limit: number): Promise<number> {
    const { rows } = await runQuery(this.pool, this.q.flowPruneEmpty, [olderThanMs, limit]);
    return rows[0].count;
  }

  /**
   * Delete up to `limit` dead letters older than `olderThanMs` with their
   * jobs: of `kinds.only` alone, else of every kind but `kinds.except`;
   * returns how many.
   */
  async deadLetterPrune(olderThanMs: number, limit: number, kinds: { only?: string; except?: readonly string[] } = {}): Promise<number> {
    const { rows } = await runQuery(this.pool, this.q.deadLetterPrune, [olderThanMs, limit, kinds.only ?? null, kinds.except ?? []]);
    return rows[0].count;
  }
}
