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
  "Recheck Cond"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  /** The partition a scan read, when asOneJobsTable named it `jobs`. */
  Partition?: string;
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
    const schema = /"?([A-Za-z0-9_]+)"?\.jobs\b/.exec(text)?.[1];
    return await asOneJobsTable(client, scans(rows[0]["QUERY PLAN"][0].Plan), schema);
  } catch (error) {
    throw new Error(`${name}: ${(error as Error).message}`);
  } finally {
    await client.query("DEALLOCATE plan_check; RESET plan_cache_mode").catch(() => {});
    client.release();
  }
}

/**
 * Plans over the partitions of `jobs` (jobs_live, jobs_dead, the days of
 * job_history) as if over one table (genericPlan reads every plan so): each partition's scans named `jobs`,
 * and each index a partition inherited named as its parent's. Tests about
 * which rows a statement reaches, not which partition holds them, read
 * plans through this.
 */
export async function asOneJobsTable(pool: Pick<pg.Pool, "query">, nodes: PlanNode[], schema?: string): Promise<PlanNode[]> {
  const names = [...new Set(nodes.flatMap((node) => [node["Relation Name"], node["Index Name"]]).filter((name) => name !== undefined))];
  // Every schema's partitions have the same names and parents, so any of them answers.
  const { rows } = await pool.query<{ name: string; root: string }>(
    `SELECT c.relname AS name, min(r.relname) AS root FROM pg_class AS c
       JOIN pg_class AS r ON r.oid = pg_partition_root(c.oid)
      WHERE c.relname = ANY($1::text[]) AND c.relispartition
      GROUP BY c.relname`,
    [names],
  );
  const roots = new Map(rows.map((row) => [row.name, row.root]));
  // A scan of a partition that holds nothing (a day ahead, say) reads nothing, whatever its kind.
  const empty = new Set<string>();
  for (const node of nodes) {
    const partition = node["Relation Name"];
    if (node["Node Type"] !== "Seq Scan" || partition === undefined || !roots.has(partition)) continue;
    if (node["Actual Loops"] !== undefined) {
      if ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0) === 0) empty.add(partition);
    } else if (schema !== undefined) {
      const { rows: found } = await pool.query(`SELECT EXISTS (SELECT 1 FROM "${schema}"."${partition}") AS any`);
      if (!found[0].any) empty.add(partition);
    }
  }
  return nodes
    .filter((node) => node["Node Type"] !== "Seq Scan" || !empty.has(node["Relation Name"] ?? ""))
    .map((node) => ({
      ...node,
      ...(node["Relation Name"] ? { "Relation Name": roots.get(node["Relation Name"]) ?? node["Relation Name"], Partition: node["Relation Name"] } : {}),
      ...(node["Index Name"] ? { "Index Name": roots.get(node["Index Name"]) ?? node["Index Name"] } : {}),
    }));
}
