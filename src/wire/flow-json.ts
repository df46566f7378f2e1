import type { DependencyLink, FlowInfo, JobDependencies } from "../core/flows.js";
import type { Job } from "../core/model.js";
import { JOB_STATUSES, type JobStatus } from "../core/states.js";
import { isoOrNull, type JobJson, jobJson } from "./serialize.js";

/**
 * Flows, batches and dependency links as JSON, shared by the API and the
 * CLI's `--json`: the same shapes as `serialize.ts` (camelCase, ISO times).
 */

/** A flow or batch without its jobs (what `GET /v1/flows` lists). */
export interface FlowJson {
  id: string;
  tenant: string;
  kind: "flow" | "batch";
  name: string | null;
  idempotencyKey: string | null;
  callbackJobId: string | null;
  createdAt: string | null;
}

/** A job of a flow: its name, what it waits for (with their names when in the flow), and the job. */
export interface FlowNodeJson {
  node: string;
  dependsOn: Array<{ jobId: string; node: string | null }>;
  job: JobJson;
}

/** A flow with its jobs and their counts by status (`GET /v1/flows/{id}`). */
export interface FlowDetailJson extends FlowJson {
  counts: Record<JobStatus, number>;
  jobs: FlowNodeJson[];
}

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

/** A dependency link as JSON (the same fields as the library's). */
export function dependencyLinkJson(link: DependencyLink): DependencyLink {
  return { jobId: link.jobId, kind: link.kind, status: link.status, node: link.node, onFailure: link.onFailure };
}

/** What a job waits for and what waits for it (`GET /v1/jobs/{id}/dependencies`). */
export function jobDependenciesJson(jobId: string, found: JobDependencies) {
  return {
    jobId,
    flowId: found.flowId,
    node: found.node,
    dependencies: found.dependencies.map(dependencyLinkJson),
    dependents: found.dependents.map(dependencyLinkJson),
    counts: found.counts,
  };
}

