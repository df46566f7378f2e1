import { createHash } from "node:crypto";
import { DEFAULT_TENANT } from "../core/defaults.js";
import { FlowIdempotencyConflictError, ValidationError } from "../core/errors.js";
import {
  BATCH_CALLBACK_WHENS,
  checkDependencyPolicy,
  checkNodeName,
  DEFAULT_DEPENDENCY_POLICY,
  type DependencyPolicy,
  type JobDependency,
  MAX_DEPENDENCIES,
  MAX_FLOW_JOBS,
  topologicalOrder,
} from "../core/flows.js";
import { isUuid, uuidv7 } from "../core/ids.js";
import type { Job } from "../core/model.js";
import { checkIdempotencyKey, checkKnownFields, checkTenant } from "../core/validate.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import type { Pool, Queryable } from "../store/db.js";
import type { DependencyTarget, GraphEdge, GraphJobRow } from "../store/flow-store.js";
import type { JobInsertRow } from "../store/job-insert-row.js";
import { isTransientConflict } from "../store/pg-errors.js";
import type { Store } from "../store/store.js";
import { withTransaction } from "../store/transaction.js";
import type { Tracing } from "../tracing/tracing.js";
import type { TraceContext } from "../core/trace-context.js";
import { checkSameRequest } from "./enqueue-race.js";
import { type EnqueueOptions, markCreated, prepareInsert } from "./enqueue.js";
import type { EnqueuedJob } from "./enqueued-job.js";

import { type BatchInput, type EnqueuedBatch, type EnqueuedFlow, FLOW_FIELDS, type FlowDependency, type FlowInput, type FlowJob } from "./flow-input.js";

export { flowJob } from "./flow-input.js";
export type { BatchInput, BatchMember, EnqueuedBatch, EnqueuedFlow, FlowDependency, FlowInput, FlowJob, FlowJobOptions, FlowJobs, PayloadFor } from "./flow-input.js";

/** How many times a graph insert that lost a deadlock is run again. */
const DEADLOCK_ROUNDS = 3;

/** One prepared node: its row and what it depends on. */
interface PreparedNode {
  name: string;
  row: JobInsertRow;
  runIf: "all" | "any_failed";
  dependencies: Array<{ node: string } | { jobId: string }>;
  policies: DependencyPolicy[];
}

/**
 * Writes graphs of jobs: flows, batches and single jobs with dependencies.
 * A graph is written in one transaction (the caller's `tx`, else one of its
 * own) or not at all; cycles, unknown names and missing or foreign
 * dependencies are refused before anything is written.
 */
export class GraphEnqueuer {
  constructor(
    private readonly store: Store,
    private readonly pool: Pool,
    private readonly definitionOf: (job: AnyJobDefinition | string) => AnyJobDefinition,
    private readonly tracing: Tracing,
  ) {}

  /** `conveyor.flows.enqueue`. */
  async enqueueFlow(input: FlowInput): Promise<EnqueuedFlow> {
    checkKnownFields(input, FLOW_FIELDS.flow, "a field of a flow");
    const tenant = checkFlowCommon(input);
    if (input.jobs === null || typeof input.jobs !== "object" || Array.isArray(input.jobs)) {
      throw new ValidationError("jobs must be an object of jobs by name", [{ path: "jobs", message: "an object" }]);
    }
    const names = Object.keys(input.jobs);
    checkSize(names.length);
    const nodes: PreparedNode[] = [];
    await this.store.clock.now();
    for (const name of names) {
      checkNodeName(name, `jobs.${name}`);
      checkKnownFields(input.jobs[name]!, FLOW_FIELDS.job, "a field of a flow's job", { path: `jobs.${name}` });
      nodes.push(await this.prepareNode(name, input.jobs[name]!, tenant, "all"));
    }
    return this.write(
      { kind: "flow", tenant, name: input.name ?? null, idempotencyKey: input.idempotencyKey ?? null, tx: input.tx, callback: null, traceContext: input.traceContext },
      nodes,
    );
  }

  /** `conveyor.flows.enqueueBatch`. */
  async enqueueBatch(input: BatchInput): Promise<EnqueuedBatch> {
    checkKnownFields(input, FLOW_FIELDS.batch, "a field of a batch");
    const tenant = checkFlowCommon(input);
    if (!Array.isArray(input.jobs) || input.jobs.length === 0) {
      throw new ValidationError("jobs must be a non-empty array", [{ path: "jobs", message: "a non-empty array" }]);
    }
    checkSize(input.jobs.length + 1);
    if (input.callback === null || typeof input.callback !== "object") {
      throw new ValidationError("callback is required: { job, payload, when? }", [{ path: "callback", message: "required" }]);
    }
    checkKnownFields(input.callback, FLOW_FIELDS.callback, "a field of a batch's callback", { path: "callback" });
    const when = input.callback.when ?? "always";
    if (!BATCH_CALLBACK_WHENS.includes(when)) {
      throw new ValidationError(`callback.when must be one of ${BATCH_CALLBACK_WHENS.join(", ")}; got ${JSON.stringify(when)}`, [
        { path: "callback.when", message: `one of ${BATCH_CALLBACK_WHENS.join(", ")}` },
      ]);
    }
    await this.store.clock.now();
    const nodes: PreparedNode[] = [];
    for (let i = 0; i < input.jobs.length; i++) {
      checkKnownFields(input.jobs[i]!, FLOW_FIELDS.member, "a field of a batch's member", { path: `jobs.${i}` });
      nodes.push(await this.prepareNode(String(i), input.jobs[i]!, tenant, "all", `jobs.${i}`));
    }
    const { when: _when, ...callbackJob } = input.callback;
    const policy: DependencyPolicy = when === "succeeded" ? "cancel" : "run";
    const callback = await this.prepareNode(
      "callback",
      { ...callbackJob, dependsOn: nodes.map((node) => node.name), onDependencyFailure: policy },
      tenant,
      when === "failed" ? "any_failed" : "all",
      "callback",
    );
    nodes.push(callback);
    const flow = await this.write(
      {
        kind: "batch",
        tenant,
        name: input.name ?? null,
        idempotencyKey: input.idempotencyKey ?? null,
        tx: input.tx,
        callback: "callback",
        traceContext: input.traceContext,
      },
      nodes,
    );
    return { id: flow.id, created: flow.created, jobs: input.jobs.map((_, i) => flow.jobs[String(i)]!), callback: flow.jobs["callback"]! };
  }

  /** `Conveyor.enqueue` with `dependsOn`: a graph of one job, no flow. */
  async enqueueDependent(definition: AnyJobDefinition, payload: unknown, options: EnqueueOptions): Promise<EnqueuedJob> {
    const { tx, dependsOn, onDependencyFailure, traceContext, ...rest } = options;
    if (rest.unique !== undefined) {
      throw new ValidationError("unique cannot be combined with dependsOn: a unique job must start queued", [
        { path: "unique", message: "not with dependsOn" },
      ]);
    }
    const tenant = rest.tenant ?? DEFAULT_TENANT;
    checkTenant(tenant);
    const node = await this.prepareNode("job", { job: definition, payload, ...rest, dependsOn: toFlowDependencies(dependsOn), onDependencyFailure }, tenant, "all", "", rest.idempotencyKey);
    const run = async (db: Queryable): Promise<EnqueuedJob> => {
      const [job] = await this.insertGraph(db, tenant, null, [node]);
      if (job) return markCreated(job);
      // The idempotency key names an earlier job: the same request gets it back.
      const [existing] = await this.store.jobs.jobGetByIdempotencyKeys(tenant, [node.row.idempotencyKey!], db);
      if (!existing) throw new ValidationError("the idempotency key's job was deleted while this enqueue ran; enqueue again");
      checkSameRequest({ ...node.row, idempotencyKey: node.row.idempotencyKey! }, existing.job, existing.job.id);
      return { ...existing.job, created: false };
    };
    const span = { queue: node.row.queue, kind: node.row.kind, tenant, jobId: node.row.id, count: 1 };
    return this.tracing.produce(span, traceContext, async (context) => {
      if (context !== undefined) node.row.traceContext = context;
      return this.inTransaction(tx, run);
    });
  }

  private async prepareNode(
    name: string,
    job: FlowJob,
    tenant: string,
    runIf: "all" | "any_failed",
    path = `jobs.${name}`,
    idempotencyKey?: string,
  ): Promise<PreparedNode> {
    const where = path === "" ? "" : `${path}.`;
    if (job === null || typeof job !== "object") {
      throw new ValidationError(`${path}: a job is { job, payload, dependsOn? }`, [{ path, message: "an object" }]);
    }
    const defaultPolicy = job.onDependencyFailure === undefined ? DEFAULT_DEPENDENCY_POLICY : checkDependencyPolicy(job.onDependencyFailure, `${where}onDependencyFailure`);
    const dependsOn = job.dependsOn ?? [];
    if (!Array.isArray(dependsOn)) throw new ValidationError(`${where}dependsOn must be an array`, [{ path: `${where}dependsOn`, message: "an array" }]);
    if (dependsOn.length > MAX_DEPENDENCIES) {
      throw new ValidationError(`${where}dependsOn: at most ${MAX_DEPENDENCIES} dependencies; got ${dependsOn.length}`);
    }
    const dependencies: PreparedNode["dependencies"] = [];
    const policies: DependencyPolicy[] = [];
    const seen = new Set<string>();
    dependsOn.forEach((entry: FlowDependency, i: number) => {
      const at = `${where}dependsOn.${i}`;
      let ref: { node: string } | { jobId: string };
      let policy = defaultPolicy;
      if (typeof entry === "string") ref = { node: entry };
      else if (entry !== null && typeof entry === "object" && ("node" in entry || "jobId" in entry)) {
        checkKnownFields(entry, "node" in entry ? FLOW_FIELDS.node : FLOW_FIELDS.jobId, "a field of a dependency", { path: at });
        ref = "node" in entry ? { node: entry.node } : { jobId: entry.jobId };
        if (entry.onFailure !== undefined) policy = checkDependencyPolicy(entry.onFailure, `${at}.onFailure`);
      } else {
        throw new ValidationError(`${at}: a dependency is a node name, { node }, or { jobId }`, [{ path: at, message: "a node name, { node } or { jobId }" }]);
      }
      if ("jobId" in ref && !isUuid(ref.jobId)) {
        throw new ValidationError(`${at}.jobId must be a job id (a UUID); got ${JSON.stringify(ref.jobId)}`, [{ path: `${at}.jobId`, message: "a UUID" }]);
      }
      const key = "node" in ref ? `n:${ref.node}` : `j:${ref.jobId.toLowerCase()}`;
      if (seen.has(key)) throw new ValidationError(`${at}: depends on ${"node" in ref ? ref.node : ref.jobId} twice`, [{ path: at, message: "a repeated dependency" }]);
      seen.add(key);
      dependencies.push(ref);
      policies.push(policy);
    });
    const { runAt, delayMs, priority, queue, maxAttempts, limitKey } = job;
    const options = { runAt, delayMs, priority, queue, maxAttempts, limitKey, tenant, idempotencyKey };
    let row: JobInsertRow;
    try {
      row = await prepareInsert(this.definitionOf(job.job), job.payload, options, this.store.clock.nowKnown());
    } catch (error) {
      if (error instanceof ValidationError && path !== "") {
        throw new ValidationError(`${path}: ${error.message}`, error.issues.map((issue) => ({ ...issue, path: `${path}.${issue.path}` })));
      }
      throw error;
    }
    return { name, row, runIf, dependencies, policies };
  }

  private async write(
    flow: {
      kind: "flow" | "batch";
      tenant: string;
      name: string | null;
      idempotencyKey: string | null;
      tx: Queryable | undefined;
      callback: string | null;
      traceContext: TraceContext | undefined;
    },
    nodes: PreparedNode[],
  ): Promise<EnqueuedFlow> {
    if (flow.name !== null && (typeof flow.name !== "string" || flow.name.length < 1 || flow.name.length > 255)) {
      throw new ValidationError("name is 1 to 255 characters", [{ path: "name", message: "1 to 255 characters" }]);
    }
    const byName = new Map(nodes.map((node) => [node.name, node]));
    const edges = new Map<string, string[]>();
    for (const node of nodes) {
      const local: string[] = [];
      node.dependencies.forEach((ref, i) => {
        if (!("node" in ref)) return;
        if (!byName.has(ref.node)) {
          const at = flow.kind === "batch" ? "callback" : `jobs.${node.name}`;
          throw new ValidationError(`${at}.dependsOn.${i}: no job named ${JSON.stringify(ref.node)} in this flow`, [
            { path: `${at}.dependsOn.${i}`, message: "no such job in the flow" },
          ]);
        }
        local.push(ref.node);
      });
      edges.set(node.name, local);
    }
    topologicalOrder(nodes.map((node) => node.name), edges);
    const flowId = uuidv7(this.store.clock.nowKnown());
    const requestHash = hashRequest(flow, nodes);
    const run = async (db: Queryable): Promise<EnqueuedFlow> => {
      const callbackJobId = flow.callback === null ? null : byName.get(flow.callback)!.row.id;
      const fresh = await this.store.flows.flowInsert(
        { id: flowId, tenant: flow.tenant, kind: flow.kind, name: flow.name, idempotencyKey: flow.idempotencyKey, requestHash, callbackJobId },
        db,
      );
      if (!fresh) return this.existingFlow(flow.tenant, flow.idempotencyKey!, requestHash, db);
      const jobs = await this.insertGraph(db, flow.tenant, flowId, nodes);
      const byNode: Record<string, Job> = {};
      nodes.forEach((node, i) => {
        byNode[node.name] = jobs[i]!;
      });
      return { id: flowId, created: true, jobs: byNode };
    };
    // One PRODUCER span for the whole flow, named after its first job, whose context every job stores.
    const first = nodes[0]!.row;
    const span = { queue: first.queue, kind: first.kind, tenant: flow.tenant, count: nodes.length };
    return this.tracing.produce(span, flow.traceContext, async (context) => {
      if (context !== undefined) for (const node of nodes) node.row.traceContext = context;
      return this.inTransaction(flow.tx, run);
    });
  }

  /** The flow an idempotency key already names, when it was asked for with the same request. */
  private async existingFlow(tenant: string, key: string, requestHash: string, db: Queryable): Promise<EnqueuedFlow> {
    const existing = await this.store.flows.flowGetByKey(tenant, key, db);
    if (!existing) throw new ValidationError("the idempotency key's flow was deleted while this enqueue ran; enqueue again");
    if (existing.requestHash !== requestHash) throw new FlowIdempotencyConflictError(key, existing.id);
    const jobs: Record<string, Job> = {};
    for (const { node, job } of await this.store.flows.flowJobList(existing.id, db)) jobs[node] = job;
    return { id: existing.id, created: false, jobs };
  }

  /**
   * Lock and check the existing dependencies, insert the jobs with their
   * counts, and settle the ones that can move at once. Results align with
   * `nodes`; null where a job's idempotency key was taken.
   */
  private async insertGraph(db: Queryable, tenant: string, flowId: string | null, nodes: readonly PreparedNode[]): Promise<Array<Job | null>> {
    const external = [...new Set(nodes.flatMap((node) => node.dependencies.flatMap((ref) => ("jobId" in ref ? [ref.jobId.toLowerCase()] : []))))];
    const targets = new Map<string, DependencyTarget>();
    if (external.length > 0) {
      for (const target of await this.store.flows.dependencyTargetsLock(external, db)) targets.set(target.id, target);
      for (const id of external) {
        const target = targets.get(id);
        // Another tenant's job is refused as if it did not exist: a tenant learns nothing of others.
        if (!target || target.tenant !== tenant) {
          throw new ValidationError(`dependsOn: no job ${id} in tenant ${JSON.stringify(tenant)}`, [{ path: "dependsOn", message: `no job ${id}` }]);
        }
      }
    }
    const idByName = new Map(nodes.map((node) => [node.name, node.row.id]));
    const parents = new Set<string>();
    const graphEdges: GraphEdge[] = [];
    const rows: GraphJobRow[] = [];
    for (const node of nodes) {
      node.dependencies.forEach((ref, i) => {
        const dependsOn = "node" in ref ? idByName.get(ref.node)! : ref.jobId.toLowerCase();
        parents.add(dependsOn);
        graphEdges.push({ dependsOn, jobId: node.row.id, onFailure: node.policies[i]! });
      });
      const hasDependencies = node.dependencies.length > 0;
      rows.push({
        row: node.row,
        status: hasDependencies ? "waiting" : "queued",
        hasDependents: false,
        node: flowId === null ? null : node.name,
        runIf: hasDependencies ? node.runIf : null,
      });
    }
    for (const row of rows) row.hasDependents = parents.has(row.row.id);
    const { jobs, settle } = await this.store.flows.flowJobsInsert(tenant, flowId, rows, graphEdges, db);
    if (settle.length === 0) return jobs;
    await this.store.flows.jobDependentsCheck(settle, db);
    const now = new Map((await this.store.flows.jobGetMany(jobs.filter((job) => job !== null).map((job) => job.id), db)).map((job) => [job.id, job]));
    return jobs.map((job) => (job === null ? null : (now.get(job.id) ?? job)));
  }

  /** Run in the caller's transaction, else in one of ours, run again when the server broke a deadlock. */
  private async inTransaction<T>(tx: Queryable | undefined, run: (db: Queryable) => Promise<T>): Promise<T> {
    if (tx) return run(tx);
    for (let round = 1; ; round++) {
      try {
        return await withTransaction(this.pool, run);
      } catch (error) {
        if (!isTransientConflict(error) || round >= DEADLOCK_ROUNDS) throw error;
      }
    }
  }
}

function checkFlowCommon(input: { tenant?: string; idempotencyKey?: string }): string {
  if (input === null || typeof input !== "object") throw new ValidationError("a flow is an object");
  const tenant = input.tenant ?? DEFAULT_TENANT;
  checkTenant(tenant);
  if (input.idempotencyKey !== undefined) checkIdempotencyKey(input.idempotencyKey);
  return tenant;
}

function checkSize(count: number): void {
  if (count > MAX_FLOW_JOBS) {
    throw new ValidationError(`a flow holds at most ${MAX_FLOW_JOBS} jobs; got ${count}`, [{ path: "jobs", message: `at most ${MAX_FLOW_JOBS}` }]);
  }
  if (count === 0) throw new ValidationError("a flow needs at least one job", [{ path: "jobs", message: "at least one" }]);
}

function toFlowDependencies(dependsOn: readonly JobDependency[] | undefined): FlowDependency[] {
  if (!Array.isArray(dependsOn)) throw new ValidationError("dependsOn must be an array of job ids", [{ path: "dependsOn", message: "an array" }]);
  if (dependsOn.length === 0) throw new ValidationError("dependsOn must name at least one job", [{ path: "dependsOn", message: "at least one" }]);
  return dependsOn.map((entry, i) => {
    if (typeof entry === "string") return { jobId: entry };
    if (entry !== null && typeof entry === "object" && typeof entry.jobId === "string") {
      checkKnownFields(entry, FLOW_FIELDS.jobId, "a field of a dependency", { path: `dependsOn.${i}` });
      return entry;
    }
    throw new ValidationError(`dependsOn.${i}: a dependency is a job id or { jobId, onFailure? }`, [{ path: `dependsOn.${i}`, message: "a job id" }]);
  });
}

/**
 * A digest of everything a flow request asks for, so the same idempotency
 * key with another request is refused. Ids and the time are left out: they
 * are made anew by every call.
 */
function hashRequest(flow: { kind: string; name: string | null; callback: string | null }, nodes: readonly PreparedNode[]): string {
  const hash = createHash("sha256");
  hash.update(JSON.stringify([flow.kind, flow.name, flow.callback]));
  for (const node of nodes) {
    const { row } = node;
    hash.update(
      JSON.stringify([
        node.name,
        row.kind,
        row.queue,
        row.priority,
        row.maxAttempts,
        row.runAt?.toISOString() ?? null,
        row.delayMs,
        node.runIf,
        node.dependencies.map((ref, i) => ["node" in ref ? `n:${ref.node}` : `j:${ref.jobId.toLowerCase()}`, node.policies[i]]),
      ]),
    );
    hash.update(row.payload);
  }
  return hash.digest("hex");
}
