import type { FlowInfo, FlowSummary } from "../core/flows.js";
import type { Job } from "../core/model.js";
import { JOB_STATUSES, type JobStatus } from "../core/states.js";
import type { FlowDetailJson, FlowJson, FlowSummaryJson } from "./flow-shapes.js";
import { isoOrNull, jobJson } from "./serialize.js";

/**
 * Flows and batches as JSON, each shape defined once: a zod schema
 * (flow-shapes.ts, the HTTP API's response schema) and the mapping from the
 * library's type here, which the CLI's `--json` prints too. The same
 * conventions as `serialize.ts` (camelCase, ISO times).
 */

export type { FlowDetailJson, FlowJson, FlowNodeJson, FlowSummaryJson } from "./flow-shapes.js";

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

