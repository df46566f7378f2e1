// One implementation for the tests and the benchmark.
export { ensurePgBouncer, type PgBouncer, startPgBouncer } from "../../bench/lib/pgbouncer.js";
