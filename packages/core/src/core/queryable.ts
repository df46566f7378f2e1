// The database boundary as a type, in core because job definitions (a
// handler's transaction, define-job.ts) name it as well as the store.

/**
 * The one thing Conveyor needs from a database connection: run a statement
 * with bound values. A `pg.Pool`, a `pg.Client` inside the caller's
 * transaction, or any driver wrapper with this shape will do; that is what
 * makes enqueueing inside your own transaction work.
 */
export interface Queryable {
  /** Run `text` with `values` bound to `$1`, `$2`…; resolve with the rows it returned and how many it touched. */
  query(
    text: string,
    values?: unknown[],
  ): Promise<{
    /** The rows returned, one object per row keyed by column name. */
    rows: any[];
    /** Rows the statement returned or changed; null when the driver does not say. */
    rowCount: number | null;
  }>;
}
