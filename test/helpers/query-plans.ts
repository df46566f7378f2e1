/**
 * Reading query plans in tests: a statement's generic plan (the one a
 * prepared statement may run on, made without its values), flattened to the
 * nodes that read a table or an index.
 */
import type pg from "pg";
import { numberArray, textArray } from "../../packages/core/src/store/array-literals.js";

export interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  Plans?: PlanNode[];
}

/** The nodes of `plan` that read a table or an index, depth first. */
export function scans(plan: PlanNode, out: PlanNode[] = []): PlanNode[] {
  if (plan["Relation Name"] || plan["Index Name"]) out.push(plan);
  for (const child of plan.Plans ?? []) scans(child, out);
  return out;
}

/** `value` as an SQL literal (arrays as array literals), for EXECUTE's arguments. */
export function literal(client: pg.PoolClient, value: unknown): string {
  if (value === null) return "NULL";
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "string") return client.escapeLiteral(value);
  if (Array.isArray(value)) {
    if (value.every((item) => typeof item === "number")) return client.escapeLiteral(numberArray(value));
    if (value.every((item) => typeof item === "boolean")) return client.escapeLiteral(`{${value.join(",")}}`);
    return client.escapeLiteral(textArray(value as (string | null)[]));
  }
  throw new Error(`no literal for ${String(value)}`);
}

/** The scans of `text`'s generic plan for `values` (plan_cache_mode = force_generic_plan). */
export async function genericPlan(pool: pg.Pool, name: string, text: string, values: unknown[]): Promise<PlanNode[]> {
  const client = await pool.connect();
  try {
    await client.query("SET plan_cache_mode = force_generic_plan");
    await client.query(`PREPARE plan_check AS ${text}`);
    const args = values.map((value) => literal(client, value)).join(", ");
    const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE plan_check(${args})`);
    return scans(rows[0]["QUERY PLAN"][0].Plan);
  } catch (error) {
    throw new Error(`${name}: ${(error as Error).message}`);
  } finally {
    await client.query("DEALLOCATE plan_check; RESET plan_cache_mode").catch(() => {});
    client.release();
  }
}
