import { uuidv7 } from "../core/ids.js";

/**
 * `count` fresh execution ids for a claim's $6, as the text of a uuid[]
 * literal: UUIDs need no quoting, so one join replaces the pg driver's
 * element-by-element escaping. Time-ordered, like every id here, so the
 * executions' primary key grows at its right edge.
 */
export function freshExecutionIds(count: number): string {
  const ids = new Array<string>(count);
  for (let i = 0; i < count; i++) ids[i] = uuidv7();
  return `{${ids.join(",")}}`;
}
