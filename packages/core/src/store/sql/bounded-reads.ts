// The settings of a bounded read's own transaction (bounded-read.ts). Not a
// statement of the store's queries: it is sent before the read it bounds.

/**
 * For the rest of the transaction: no statement runs longer than $1 ms
 * (0: no bound), and none is compiled by JIT. The reads it bounds are
 * short by construction (LIMITs inside lateral loops), but the planner
 * costs them without those limits and, past `jit_above_cost`, compiled
 * them first: that took longer than the reads themselves.
 * $1 statement_timeout in ms, as text
 */
export const boundedReadSettings = `
SELECT set_config('statement_timeout', $1, true), set_config('jit', 'off', true)`;

/**
 * For the rest of the transaction: no sequential scans where an index can
 * serve. For a count that stops at its limit: the planner reads the table
 * from its start when it expects matches spread evenly through it, but the
 * jobs a count looks for (ready, running, recent) cluster wherever they
 * were written last, and such a read could cross most of the table before
 * the first. Through an index (a partial index, else the primary key) the
 * cost is what is read. No parameters.
 */
export const boundedReadIndexOnly = `
SELECT set_config('enable_seqscan', 'off', true)`;
