import { uuidv7ArrayLiteral } from "../core/ids.js";

/**
 * `count` fresh execution ids for a claim's $6, as the text of a uuid[]
 * literal, made at `nowMs` (the database's clock: DatabaseClock).
 * Time-ordered, like every id here, so the executions' primary key grows at
 * its right edge.
 */
export function freshExecutionIds(count: number, nowMs: number): string {
  return uuidv7ArrayLiteral(count, nowMs);
}
