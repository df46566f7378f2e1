// The database server's clock, for ids made in this process (store/database-clock.ts).

/**
 * The server's clock now, in Unix ms (clock_timestamp(): the moment of the
 * call, not of the transaction's start).
 * No parameters.
 */
export const clockRead = `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms`;
