import { BULK_ACTION_SWEEP_LIMIT } from "../core/defaults.js";
import type { BulkAction, BulkActionInput } from "../core/bulk-actions.js";
import type { Page } from "../core/model.js";
import type { BulkActionStore } from "../store/bulk-action-store.js";
import type { BulkActionRunner, BulkActionTuning, RunBulkActionOptions } from "./bulk-action-runner.js";
import { decodeCursor } from "./cursor.js";
import { checkLimit, pageOf } from "./paging.js";
import { checkId, type TenantScope, scopeTenant } from "./scope.js";
import { checkKnownFields } from "../core/validate.js";

/** Which bulk actions `bulkActions.list` lists: a tenant's (default: every tenant's), a page size and a cursor. */
export interface ListBulkActionsFilter extends TenantScope {
  /**
   * Page size, 1 to `MAX_LIST_LIMIT` (1000).
   * @defaultValue `DEFAULT_LIST_LIMIT` (50)
   */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string | null;
}

/**
 * Bulk actions (`conveyor.bulkActions`): retry, cancel, purge,
 * reprioritize or move every job a filter selects, in short batches, as a
 * stored operation that any process can follow, cancel or resume.
 *
 * @example
 * const operation = await conveyor.bulkActions.start({ action: "retry", filter: { status: "dead", kind: "email.send" } });
 * const ended = await conveyor.bulkActions.run(operation.id, { onProgress: (op) => console.log(op.touched, "of", op.total) });
 */
export class BulkActions {
  /** @internal Made by the client, from its store and the runner of its walks. */
  constructor(
    private readonly store: BulkActionStore,
    private readonly runner: BulkActionRunner,
  ) {}

  /**
   * Batch size and pacing of the operations this client runs (started or
   * resumed here); change them before starting one. Defaults: the
   * `BULK_ACTION_*` constants (see each field).
   */
  get tuning(): BulkActionTuning {
    return this.runner.tuning;
  }

  /** How this process is named as the owner of the operations it runs (host, pid and a unique id). */
  get owner(): string {
    return this.runner.owner;
  }

  /**
   * Start a bulk action: retry, cancel, purge, reprioritize or move every
   * job `input.filter` selects, among the states the action applies to
   * (`BULK_ACTION_STATES`). Checked first (a `ValidationError` names the
   * field; nothing is stored), then the jobs are counted (an estimate on
   * large tables) and the operation is stored and returned, `running`.
   * This process then runs it in the background, in batches of
   * `tuning.batchSize` jobs (default `BULK_ACTION_BATCH_SIZE`), each one
   * short transaction, with a pause between them; `close()` stops it
   * between two batches, and any process resumes it (`resume`, `run`). The
   * operation is the record: who asked (`requestedBy`), when, with what
   * filter, and how many jobs it touched. `scope.tenant` limits it to that
   * tenant's jobs (a filter naming another tenant is refused); default:
   * every tenant, or the filter's.
   *
   * @example
   * const operation = await conveyor.bulkActions.start({ action: "cancel", filter: { queue: "mail", status: "queued" } });
   */
  async start(input: BulkActionInput, scope: TenantScope = {}): Promise<BulkAction> {
    return this.runner.start(input, scopeTenant(scope));
  }

  /** A bulk action; null when there is none (for this tenant: a tenant sees only its own operations). */
  async get(id: string, scope: TenantScope = {}): Promise<BulkAction | null> {
    checkId(id);
    return this.store.bulkActionGet(id, scopeTenant(scope));
  }

  /** Bulk actions, newest first, with cursor pagination (`filter.limit` defaults to `DEFAULT_LIST_LIMIT`). */
  async list(filter: ListBulkActionsFilter = {}): Promise<Page<BulkAction>> {
    checkKnownFields(filter, { tenant: true, limit: true, cursor: true }, "a bulk action list filter");
    const limit = checkLimit(filter.limit);
    const rows = await this.store.bulkActionList({ tenant: filter.tenant ?? null, beforeId: decodeCursor(filter.cursor), limit: limit + 1 });
    return pageOf(rows, limit);
  }

  /**
   * Cancel a running bulk action: its walk stops before its next batch and
   * ends `cancelled`, keeping what it did so far (one that no process runs
   * ends at once). Returns the operation. Throws NotFoundError when there
   * is none (for this tenant), ConflictError when it already ended.
   */
  async cancel(id: string, scope: TenantScope = {}): Promise<BulkAction> {
    checkId(id);
    return this.runner.cancel(id, scopeTenant(scope));
  }

  /**
   * Run a bulk action to its end in this process and resolve with its
   * final record: the walk this client started, one whose process is gone
   * (taken over from its cursor), or, while another live process runs it,
   * that one's, followed until it ends. Resolves with the record as it is
   * when this client closes first. Throws NotFoundError when there is none.
   */
  async run(id: string, options: RunBulkActionOptions = {}): Promise<BulkAction> {
    checkId(id);
    checkKnownFields(options, { onProgress: true }, "an option of bulkActions.run");
    return this.runner.run(id, options);
  }

  /**
   * Take over the running bulk actions whose process is gone (its lease
   * lapsed, or it closed) and run them here in the background, up to
   * `BULK_ACTION_SWEEP_LIMIT` per call; returns them. The HTTP API calls
   * this periodically; safe from any number of processes at once.
   */
  resume(): Promise<BulkAction[]> {
    return this.runner.resume(BULK_ACTION_SWEEP_LIMIT);
  }
}
