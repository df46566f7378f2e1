import { uuidv7 } from "../core/ids.js";
import { textArray } from "./array-literals.js";

/**
 * `count` fresh execution ids for a claim's $6, as the text of a uuid[]
 * literal. Time-ordered, like every id here, so the executions' primary key
 * grows at its right edge.
 */
export function freshExecutionIds(count: number): string {
  return textArray(Array.from({ length: count }, () => uuidv7()));
}
