import { ValidationError } from "./errors.js";
export { DEFAULT_DEPENDENCY_POLICY, MAX_DEPENDENCIES, MAX_FLOW_JOBS } from "./defaults.js";
import type { Job, StoredError } from "./model.js";
import type { JobStatus } from "./states.js";

/**
 * What happens to a job when one of its dependencies ends other than
 * `succeeded` (dead, or cancelled):
 *
 * - `fail`: the job is dead-lettered at once (reason `dependency_failed`),
 *   its error naming the dependency;
 * - `cancel`: the job is cancelled at once;
 * - `run`: the dependency counts as ended; the job runs once every
 *   dependency has ended, and reads their outcomes (`ctx.dependencies()`).
 */
export type DependencyPolicy = "fail" | "cancel" | "run";

/** One dependency of `enqueue`'s `dependsOn`: a job id, or a job id with its own policy. */
export type JobDependency =
  | string
  | {
      /** The id of the job waited for. */
      jobId: string;
      /** What happens to the dependent when this one ends other than succeeded; default the enqueue's `onDependencyFailure`. */
      onFailure?: DependencyPolicy;
    };

/** Every `DependencyPolicy`. */
export const DEPENDENCY_POLICIES: readonly DependencyPolicy[] = ["fail", "cancel", "run"];

/**
 * When a batch's callback runs, once every member has ended:
 * `always` (default), `succeeded` (only if every member succeeded; else it
 * is cancelled as soon as one fails), `failed` (only if at least one member
 * did not succeed; else it is cancelled).
 */
export type BatchCallbackWhen = "always" | "succeeded" | "failed";

/** Every `BatchCallbackWhen`. */
export const BATCH_CALLBACK_WHENS: readonly BatchCallbackWhen[] = ["always", "succeeded", "failed"];

/** A node's name in a flow: 1 to 255 characters. */
export function checkNodeName(name: string, path: string): void {
  if (typeof name !== "string" || name.length < 1 || name.length > 255) {
    throw new ValidationError(`${path}: a node name is 1 to 255 characters; got ${JSON.stringify(name)}`, [
      { path, message: "1 to 255 characters" },
    ]);
  }
}

/** Refuse anything but a known policy, naming where it was given. */
export function checkDependencyPolicy(value: unknown, path: string): DependencyPolicy {
  if (typeof value !== "string" || !(DEPENDENCY_POLICIES as readonly string[]).includes(value)) {
    throw new ValidationError(`${path} must be one of ${DEPENDENCY_POLICIES.join(", ")}; got ${JSON.stringify(value)}`, [
      { path, message: `one of ${DEPENDENCY_POLICIES.join(", ")}` },
    ]);
  }
  return value as DependencyPolicy;
}

/**
 * The nodes of a graph in an order where each comes after everything it
 * depends on (Kahn's algorithm), or a ValidationError naming one cycle as
 * `a → b → c → a` (each depends on the next). `edges.get(n)` lists the nodes
 * `n` depends on; every name must be a node. O(nodes + edges).
 */
export function topologicalOrder(nodes: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[] {
  const dependents = new Map<string, string[]>();
  const remaining = new Map<string, number>();
  for (const node of nodes) remaining.set(node, 0);
  for (const node of nodes) {
    for (const dependency of edges.get(node) ?? []) {
      remaining.set(node, remaining.get(node)! + 1);
      let list = dependents.get(dependency);
      if (!list) dependents.set(dependency, (list = []));
      list.push(node);
    }
  }
  const order: string[] = [];
  for (const node of nodes) if (remaining.get(node) === 0) order.push(node);
  for (let i = 0; i < order.length; i++) {
    for (const dependent of dependents.get(order[i]!) ?? []) {
      const left = remaining.get(dependent)! - 1;
      remaining.set(dependent, left);
      if (left === 0) order.push(dependent);
    }
  }
  if (order.length === nodes.length) return order;
  const cycle = findCycle(nodes.filter((node) => remaining.get(node)! > 0), edges);
  throw new ValidationError(`the flow has a cycle: ${cycle.join(" → ")}`, [
    { path: `jobs.${cycle[0]}.dependsOn`, message: `cycle ${cycle.join(" → ")}` },
  ]);
}

/**
 * One cycle among `stuck` nodes (those Kahn's algorithm could not order:
 * each still has a dependency among them), found by walking dependencies
 * until a node repeats.
 */
function findCycle(stuck: readonly string[], edges: ReadonlyMap<string, readonly string[]>): string[] {
  const inStuck = new Set(stuck);
  const seenAt = new Map<string, number>();
  const path: string[] = [];
  let node = stuck[0]!;
  while (!seenAt.has(node)) {
    seenAt.set(node, path.length);
    path.push(node);
    node = (edges.get(node) ?? []).find((dependency) => inStuck.has(dependency))!;
  }
  return [...path.slice(seenAt.get(node)!), node];
}

/** A flow (a graph of jobs enqueued together) or a batch (members and a callback). */
export interface FlowInfo {
  /** UUIDv7. */
  id: string;
  /** The tenant of every job in it. */
  tenant: string;
  /** `flow` (flows.enqueue) or `batch` (flows.enqueueBatch). */
  kind: "flow" | "batch";
  /** The label it was given; null when none. */
  name: string | null;
  /** The idempotency key it was enqueued with; null when none. */
  idempotencyKey: string | null;
  /** A batch's callback job; null for a flow. */
  callbackJobId: string | null;
  /** When it was enqueued. */
  createdAt: Date;
}

/** A link between two jobs, seen from one of them. */
export interface DependencyLink {
  /** The other job. */
  jobId: string;
  /** Its kind. */
  kind: string;
  /** Its state now. */
  status: JobStatus;
  /** Its name in its flow; null outside a flow. */
  node: string | null;
  /** The edge's policy. */
  onFailure: DependencyPolicy;
}

/** Where a job stands in the dependency graph. */
export interface JobDependencies {
  /** The flow it belongs to; null when none. */
  flowId: string | null;
  /** Its name in that flow; null when none. */
  node: string | null;
  /** What it waits for (its parents). */
  dependencies: DependencyLink[];
  /** What waits for it (its children). */
  dependents: DependencyLink[];
  /**
   * Its dependency counts; null when it has no dependencies (or was
   * released from them by a requeue). `pending`: not ended yet; `failed`:
   * ended other than succeeded; `blocking`: of those, with policy fail or cancel.
   */
  counts: {
    /** Dependencies not ended yet. */
    pending: number;
    /** Dependencies that ended other than succeeded. */
    failed: number;
    /** Failed dependencies whose policy is fail or cancel. */
    blocking: number;
  } | null;
}

/** A dependency's outcome, as a dependent's handler reads it (`ctx.dependencies()`). */
export interface DependencyOutcome<R = unknown> {
  /** The dependency's job id. */
  jobId: string;
  /** Its name in its flow; null outside a flow. */
  node: string | null;
  /** Its kind. */
  kind: string;
  /** How it ended (`succeeded`, `dead` or `cancelled`; under policy `run` any of them). */
  status: JobStatus;
  /** What its handler returned, when it succeeded; else null. */
  result: R | null;
  /** Its last error; null when none. */
  error: StoredError | null;
}

/** Counts of a job's dependencies by how they ended: what a batch callback reads (`ctx.dependencySummary()`). */
export interface DependencySummary {
  /** Every dependency (a batch's members). */
  total: number;
  /** Those that succeeded. */
  succeeded: number;
  /** Those dead-lettered. */
  dead: number;
  /** Those cancelled. */
  cancelled: number;
  /** Those that have not ended (0 for a job released by its dependencies, unless a requeue re-armed one). */
  unfinished: number;
  /** The ids of those that ended dead or cancelled, in id order. */
  failedJobIds: string[];
}

/** One job of a flow or batch, as `flows.get` lists it. */
export interface FlowMember {
  /** Its name in the flow. */
  node: string;
  /** The job. */
  job: Job;
  /** The names of the flow's jobs it waits for. */
  dependsOn: string[];
}

/** A flow or batch as `flows.list` lists it: its row and its jobs counted by status. */
export interface FlowSummary extends FlowInfo {
  /** Its jobs by status, every status present (0 when none). */
  counts: Record<JobStatus, number>;
}

/** A flow or batch with every job in it (`flows.get`). */
export interface FlowDetail extends FlowInfo {
  /** Every job of the flow, with what each waits for. */
  jobs: FlowMember[];
}

/** What `flows.cancel` did. */
export interface FlowCancelResult {
  /** Jobs cancelled at once: they had not started. */
  cancelled: number;
  /** Running jobs asked to stop; each one's worker is told at once (at its next heartbeat if it only polls), and the job ends cancelled when its handler returns. */
  cancelRequested: number;
}
