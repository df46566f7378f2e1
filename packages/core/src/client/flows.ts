import { NotFoundError, ValidationError } from "../core/errors.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import type { FlowCancelResult, FlowDetail, FlowSummary, JobDependencies } from "../core/flows.js";
import { JOB_STATUSES, type JobStatus } from "../core/states.js";
import type { Page } from "../core/model.js";
import type { Store } from "../store/store.js";
import { decodeCursor } from "./cursor.js";
import type { BatchInput, EnqueuedBatch, EnqueuedFlow, FlowInput } from "./flow-input.js";
import type { GraphEnqueuer } from "./enqueue-flow.js";
import { checkLimit, pageOf } from "./paging.js";
import { checkId, type TenantScope, scopeTenant } from "./scope.js";
import { checkKnownFields } from "../core/validate.js";

/** Which flows `flows.list` lists: a tenant's (default: every tenant's), of one kind or both, a page size and a cursor. */
export interface ListFlowsFilter extends TenantScope {
  /** Only flows (`flow`) or only batches (`batch`); default both. */
  kind?: "flow" | "batch";
  /**
   * Page size, 1 to `MAX_LIST_LIMIT` (1000).
   * @defaultValue `DEFAULT_LIST_LIMIT` (50)
   */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string | null;
}

/**
 * Flows and batches (`conveyor.flows`): graphs of jobs that wait for each
 * other, enqueued in one call, then read, listed and cancelled as a whole.
 * A single dependent job is enqueued with `conveyor.enqueue(…, { dependsOn })`.
 *
 * @example
 * const { jobs } = await conveyor.flows.enqueue({
 *   jobs: { fetch: flowJob(fetchPage, { url }), parse: { ...flowJob(parsePage, { url }), dependsOn: ["fetch"] } },
 * });
 */
export class Flows {
  /** @internal Made by the client: `graphs` writes graphs, `store` cancels, `reader` reads (a read replica's when the client has one). */
  constructor(
    private readonly graphs: GraphEnqueuer,
    private readonly store: Store,
    private readonly reader: Store,
  ) {}

  /**
   * Enqueue a graph of jobs in one call and one transaction (yours with
   * `tx`), or nothing: each job names what it waits for (`dependsOn`: other
   * jobs of the flow by name, or existing jobs by id) and the policy when one
   * of them ends other than succeeded. Cycles, unknown names and missing or
   * foreign dependencies are refused with a `ValidationError` before anything
   * is written. A job waits (`waiting`) until every dependency has ended;
   * the statement that ends the last one releases it, in the same
   * transaction. 10,000 jobs in one call are fine (at most `MAX_FLOW_JOBS`).
   */
  enqueue<J extends Readonly<Record<string, AnyJobDefinition | string>>>(flow: FlowInput<J>): Promise<EnqueuedFlow> {
    return this.graphs.enqueueFlow(flow as unknown as FlowInput);
  }

  /**
   * Enqueue a batch: its members, ready at once, and a callback job released
   * exactly once when every member has ended (`callback.when`: `always`,
   * `succeeded` or `failed`; otherwise it is cancelled). The callback's
   * handler reads the counts and failed members with `ctx.dependencySummary()`.
   */
  enqueueBatch<M extends ReadonlyArray<AnyJobDefinition | string>, C extends AnyJobDefinition | string>(batch: BatchInput<M, C>): Promise<EnqueuedBatch> {
    return this.graphs.enqueueBatch(batch as unknown as BatchInput);
  }

  /** A flow or batch with every job in it and what each depends on; null when there is none (for this tenant). */
  async get(id: string, scope: TenantScope = {}): Promise<FlowDetail | null> {
    checkId(id);
    const flow = await this.reader.flows.flowGet(id, scopeTenant(scope));
    if (!flow) return null;
    const { requestHash: _hash, ...info } = flow;
    return { ...info, jobs: await this.reader.flows.flowJobList(id) };
  }

  /**
   * Flows and batches, newest first, each with its jobs counted by status,
   * with cursor pagination (`filter.limit` defaults to `DEFAULT_LIST_LIMIT`).
   */
  async list(filter: ListFlowsFilter = {}): Promise<Page<FlowSummary>> {
    checkKnownFields(filter, { tenant: true, kind: true, limit: true, cursor: true }, "a flow list filter");
    if (filter.kind !== undefined && filter.kind !== "flow" && filter.kind !== "batch") {
      throw new ValidationError(`kind must be flow or batch; got ${JSON.stringify(filter.kind)}`, [{ path: "kind", message: "flow or batch" }]);
    }
    const limit = checkLimit(filter.limit);
    const rows = await this.reader.flows.flowList({
      tenant: filter.tenant ?? null,
      kind: filter.kind ?? null,
      beforeId: decodeCursor(filter.cursor),
      limit: limit + 1,
    });
    return pageOf(
      rows.map(({ requestHash: _hash, counts, ...info }) => ({
        ...info,
        counts: Object.fromEntries(JOB_STATUSES.map((status) => [status, counts[status] ?? 0])) as Record<JobStatus, number>,
      })),
      limit,
    );
  }

  /**
   * Cancel a flow or batch: its jobs that have not started are cancelled at
   * once, running ones are asked to stop as `conveyor.cancel` does. What
   * waits on a cancelled job follows its policy. Throws NotFoundError when
   * there is no such flow (for this tenant).
   */
  async cancel(id: string, scope: TenantScope = {}): Promise<FlowCancelResult> {
    checkId(id);
    const done = await this.store.flows.flowCancel(id, scopeTenant(scope));
    if (!done) throw new NotFoundError(`flow ${id} not found`);
    return done;
  }

  /** What a job waits for and what waits for it; null when there is no such job (for this tenant). */
  async getJobDependencies(id: string, scope: TenantScope = {}): Promise<JobDependencies | null> {
    checkId(id);
    if (!(await this.reader.jobs.jobGet(id, scopeTenant(scope)))) return null;
    const [links, state] = await Promise.all([this.reader.flows.jobDependencyLinks(id), this.reader.flows.jobFlowState(id)]);
    const strip = ({ direction: _direction, ...link }: (typeof links)[number]) => link;
    return {
      flowId: state.flowId,
      node: state.node,
      dependencies: links.filter((link) => link.direction === "dependency").map(strip),
      dependents: links.filter((link) => link.direction === "dependent").map(strip),
      counts: state.dependencies && {
        pending: state.dependencies.pending,
        failed: state.dependencies.failed,
        blocking: state.dependencies.blocking,
      },
    };
  }
}
