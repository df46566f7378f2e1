import { uuidv7 } from "../core/ids.js";
import { textArray } from "./array-literals.js";

/**
 * `count` fresh execution ids for a claim's $6, as the text of a uuid[]
 * literal, made at `nowMs` (the database's clock: DatabaseClock).
 * Time-ordered, like every id here, so the executions' primary key grows at
 * its right edge.
 */
export function freshExecutionIds(count: number, nowMs: number): string {
  return textArray(Array.from({ length: count }, () => uuidv7(nowMs)));
}
