import { COPY_MIN_ROWS, ENQUEUE_CHUNK_ROWS } from "../core/defaults.js";

/**
 * How an enqueue call writes its jobs. Every `enqueue` and `enqueueMany`
 * asks `chooseInsertStrategy`; the paths themselves live in
 * ConveyorClient (COPY, chunks) and enqueue.ts (`insertJobs`).
 *
 * | strategy    | when                                                          | why it exists                                                                                   |
 * |-------------|---------------------------------------------------------------|-------------------------------------------------------------------------------------------------|
 * | `statement` | up to ENQUEUE_CHUNK_ROWS (5,000) rows, in the caller's `tx`,  | one INSERT (`unnest` arrays; one row uses a plain INSERT) is atomic by itself; in the caller's  |
 * |             | or without keys, or a single row                              | transaction the caller's commit decides                                                         |
 * | `keyed`     | 2 to ENQUEUE_CHUNK_ROWS rows with an idempotency or unique    | a key settled after the insert may refuse the call (a different request, `drop`), which must    |
 * |             | key, outside a caller's `tx`                                  | undo rows already written; unique rows take a statement each: all or nothing needs a transaction |
 * | `copy`      | COPY_MIN_ROWS (2,000) rows or more, no keys, outside a        | COPY streams rows faster than INSERT (1.2× at 2,000, 1.6× at 5,000), validating each chunk      |
 * |             | caller's `tx` (checked before `chunked`)                      | while the server writes the one before; it cannot answer a key with an existing job, and runs   |
 * |             |                                                               | on a connection of its own, so not in the caller's transaction                                  |
 * | `chunked`   | more than ENQUEUE_CHUNK_ROWS rows otherwise                   | one statement's arrays stay bounded; statements of ENQUEUE_CHUNK_ROWS go one after another on   |
 * |             |                                                               | one transaction (the caller's, else one of its own) so the call stays all or nothing            |
 *
 * Inside each, `insertJobs` writes rows with a unique key one statement
 * each, in input order, and the ordinary rows between them together.
 */
export type InsertStrategy = "statement" | "keyed" | "copy" | "chunked";

/** What the choice depends on. */
export interface InsertCall {
  /** Jobs in the call (at least 1). */
  rows: number;
  /** The caller passed `tx`. */
  inCallerTransaction: boolean;
  /** Some job carries an idempotency key or a unique key. */
  keyed: boolean;
}

/** The strategy for one call (table above). */
export function chooseInsertStrategy({ rows, inCallerTransaction, keyed }: InsertCall): InsertStrategy {
  if (!inCallerTransaction && !keyed && rows >= COPY_MIN_ROWS) return "copy";
  if (rows > ENQUEUE_CHUNK_ROWS) return "chunked";
  if (keyed && !inCallerTransaction && rows > 1) return "keyed";
  return "statement";
}
