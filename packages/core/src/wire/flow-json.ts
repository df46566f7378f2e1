import { z } from "zod";
import type { FlowInfo, FlowSummary } from "../core/flows.js";
import type { Job } from "../core/model.js";
import { JOB_STATUSES, type JobStatus } from "../core/states.js";
import { isoOrNull, jobJson, jobShape, storedTime } from "./serialize.js";

/**
 * Flows and batches as JSON, each shape defined once: a zod schema (the HTTP
 * API's response schema) and the mapping from the library's type, which the
 * CLI's `--json` prints too. The same conventions as `serialize.ts`
 * (camelCase, ISO times).
 */

/** A flow or batch without its jobs (what `GET /v1/flows` lists). */
export const flowShape = z.object({
  id: z.uuid(),
  tenant: z.string(),
  kind: z.enum(["flow", "batch"]).describe("flow: a graph (POST /v1/flows); batch: members and a callback (POST /v1/batches)"),
  name: z.string().nullable(),
  idempotencyKey: z.string().nullable(),
  callbackJobId: z.uuid().nullable().describe("a batch's callback job; null for a flow"),
  createdAt: storedTime,
});

/** Jobs by state, every state present. */
export const statusCountsShape = z.object(
  Object.fromEntries(JOB_STATUSES.map((status) => [status, z.number().int()])) as Record<JobStatus, z.ZodNumber>,
);

/** A flow or batch as `GET /v1/flows` lists it: its row and its jobs counted by status. */
export const flowSummaryShape = flowShape.extend({
  counts: statusCountsShape.describe("the flow's jobs by status, every status present"),
});

/** A job of a flow: its name, what it waits for (with their names when in the flow), and the job. */
export const flowNodeShape = z.object({
  node: z.string().describe("the job's name in the flow"),
  dependsOn: z
    .array(z.object({ jobId: z.uuid(), node: z.string().nullable().describe("its name when it is in this flow; null for a job outside it") }))
    .describe("what the job waits for, in id order"),
  job: jobShape,
});

/** A flow with its jobs and their counts by status (`GET /v1/flows/{id}`). */
export const flowDetailShape = flowShape.extend({
  counts: statusCountsShape.describe("the flow's jobs by status"),
  jobs: z.array(flowNodeShape).describe("in id order"),
});

/** A flow or batch without its jobs, as JSON. */
export type FlowJson = z.output<typeof flowShape>;
/** A flow or batch with its jobs counted by status, as JSON. */
export type FlowSummaryJson = z.output<typeof flowSummaryShape>;
/** A job of a flow with its dependencies, as JSON. */
export type FlowNodeJson = z.output<typeof flowNodeShape>;
/** A flow with its jobs and their counts by status, as JSON. */
export type FlowDetailJson = z.output<typeof flowDetailShape>;

/** A flow as `flows.get` returns it. */
export type FlowWithJobs = FlowInfo & { jobs: ReadonlyArray<{ node: string; job: Job; dependsOn: readonly string[] }> };

/** A flow's row as JSON. */
export function flowJson(flow: FlowInfo): FlowJson {
  return {
    id: flow.id,
    tenant: flow.tenant,
    kind: flow.kind,
    name: flow.name,
    idempotencyKey: flow.idempotencyKey,
    callbackJobId: flow.callbackJobId,
    createdAt: isoOrNull(flow.createdAt),
  };
}

/** A listed flow as JSON: its row and its counts by status. */
export function flowSummaryJson(flow: FlowSummary): FlowSummaryJson {
  return { ...flowJson(flow), counts: { ...flow.counts } };
}

/** Jobs counted by status, every status present (0 when none). */
export function countByStatus(statuses: Iterable<JobStatus>): Record<JobStatus, number> {
  const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
  for (const status of statuses) counts[status] += 1;
  return counts;
}

/** A flow with every job, each dependency named by its node when it is in the flow. */
export function flowDetailJson(flow: FlowWithJobs): FlowDetailJson {
  const nodeOf = new Map(flow.jobs.map((entry) => [entry.job.id, entry.node]));
  return {
    ...flowJson(flow),
    counts: countByStatus(flow.jobs.map((entry) => entry.job.status)),
    jobs: flow.jobs.map((entry) => ({
      node: entry.node,
      dependsOn: entry.dependsOn.map((id) => ({ jobId: id, node: nodeOf.get(id) ?? null })),
      job: jobJson(entry.job),
    })),
  };
}

