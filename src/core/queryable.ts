// The database boundary as a type, in core because job definitions (a
// handler's transaction, define-job.ts) name it as well as the store.

/**
 * The one thing Conveyor needs from a database connection: run a statement
 * with bound values. A `pg.Pool`, a `pg.Client` inside the caller's
 * transaction, or any driver wrapper with this shape will do; that is what
 * makes enqueueing inside your own transaction work.
 */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
}
