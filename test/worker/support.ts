import pino from "pino";
import { z } from "zod";
import type { Conveyor } from "../../packages/core/src/index.js";

export const silent = pino({ level: "silent" });

export const emptyPayload = z.object({});

/** Count jobs by status in the client's schema. */
export async function statusCounts(conveyor: Conveyor): Promise<Record<string, number>> {
  const { rows } = await conveyor.pool.query(`SELECT status, count(*)::int AS n FROM "${conveyor.options.schema}".jobs GROUP BY status`);
  return Object.fromEntries(rows.map((row: { status: string; n: number }) => [row.status, row.n]));
}

/** True once no job is queued, retrying or running. */
export async function drained(conveyor: Conveyor): Promise<boolean> {
  const counts = await statusCounts(conveyor);
  return !counts.queued && !counts.retrying && !counts.running;
}

export function sql(conveyor: Conveyor, text: string, values: unknown[] = []) {
  return conveyor.pool.query(text.replaceAll("{{schema}}", `"${conveyor.options.schema}"`), values);
}

/** When a job's lease runs out (epoch ms), as the database holds it. */
export async function leaseExpiresAt(conveyor: Conveyor, id: string): Promise<number> {
  const { rows } = await sql(conveyor, "SELECT lease_expires_at FROM {{schema}}.jobs WHERE id = $1", [id]);
  return (rows[0].lease_expires_at as Date).getTime();
}
