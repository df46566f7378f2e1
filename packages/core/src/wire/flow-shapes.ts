import { z } from "zod";
import { JOB_STATUSES, type JobStatus } from "../core/states.js";
import { jobShape, storedTime } from "./job-shapes.js";

// The zod schemas of flows and batches as JSON (the HTTP API's response
// schemas), and their JSON types; the mappings are in flow-json.ts, which
// loads without zod for the CLI.

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
