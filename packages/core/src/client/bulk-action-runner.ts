import { hostname } from "node:os";
import type { Logger } from "pino";
import {
  BULK_ACTION_BATCH_PAUSE_MS,
  BULK_ACTION_BATCH_SIZE,
  BULK_ACTION_COUNT_TIMEOUT_MS,
  BULK_ACTION_LEASE_MS,
  BULK_ACTION_LOCK_TIMEOUT_MS,
  BULK_ACTION_MAX_BATCH_TRIES,
  BULK_ACTION_PAUSE_PER_BATCH_TIME,
  BULK_ACTION_WATCH_INTERVAL_MS,
  BULK_ACTION_WINDOW_ROWS,
  ERROR_BACKOFF_MAX_MS,
  ERROR_BACKOFF_MIN_MS,
  MAX_BULK_ACTION_REQUESTED_BY_LENGTH,
} from "../core/defaults.js";
import {
  BULK_ACTION_STATES,
  BULK_ACTIONS,
  type BulkAction,
  bulkActionFilterOf,
  type BulkActionFilter,
  type BulkActionInput,
  type BulkActionKind,
  jobFilterOfBulkAction,
} from "../core/bulk-actions.js";
import { ConfigError, ConflictError, NotFoundError, ValidationError } from "../core/errors.js";
import { uuidv7 } from "../core/ids.js";
import { checkKnownFields, checkName, checkPriority, type KnownFields } from "../core/validate.js";
import type { BulkActionStore, BulkBatchOutcome, BulkBatchPlan, BulkBatchState } from "../store/bulk-action-store.js";
import type { DatabaseClock } from "../store/database-clock.js";
import { isConnectionError, isLockTimeout, isTransientConflict } from "../store/pg-errors.js";
import { checkJobFilter } from "./job-filter.js";

/** Options of `bulkActions.run`. */
export interface RunBulkActionOptions {
  /** Called with the operation after each batch (and as another process's run advances). Default none. */
  onProgress?: (operation: BulkAction) => void;
}

/** An operation checked and ready to store. */
interface CheckedBulkAction {
  action: BulkActionKind;
  tenant: string | null;
  filter: BulkActionFilter;
  priority: number | null;
  queue: string | null;
  requestedBy: string | null;
  plan: BulkBatchPlan;
}

const INPUT_FIELDS: KnownFields<BulkActionInput> = { action: true, filter: true, priority: true, queue: true, all: true, requestedBy: true };

function refuse(path: string, message: string): never {
  throw new ValidationError(`${path} ${message}`, [{ path, message }]);
}

/** The batches' plan of an operation: its filter checked again, scoped to its tenant, and the states it touches. */
function planOf(operation: Pick<BulkAction, "action" | "tenant" | "filter" | "priority" | "queue">): BulkBatchPlan {
  const filter = { ...checkJobFilter(jobFilterOfBulkAction(operation.filter)), tenant: operation.tenant };
  const states = BULK_ACTION_STATES[operation.action].filter((state) => filter.statuses == null || filter.statuses.includes(state));
  return { action: operation.action, filter, states: states as BulkBatchState[], priority: operation.priority, queue: operation.queue };
}

/**
 * Check what `bulkActions.start` was given, naming the field at fault, before
 * anything is stored. `scopeTenant`: a tenant-scoped caller acts on its
 * tenant's jobs only (a filter naming another is refused); null for all.
 */
export function checkBulkActionInput(input: BulkActionInput, scopeTenant: string | null): CheckedBulkAction {
  checkKnownFields(input, INPUT_FIELDS, "a bulk action field");
  const { action } = input;
  if (typeof action !== "string" || !(BULK_ACTIONS as readonly string[]).includes(action)) {
    refuse("action", `must be one of ${BULK_ACTIONS.join(", ")}; got ${JSON.stringify(action)}`);
  }
  if (input.filter === undefined || input.filter === null) refuse("filter", "is required: the jobs to act on (all: true with {} for every job)");
  let values: ReturnType<typeof checkJobFilter>;
  try {
    values = checkJobFilter(input.filter);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    const issues = error.issues.map((issue) => ({ path: `filter.${issue.path}`, message: issue.message }));
    throw new ValidationError(`filter.${error.message}`, issues);
  }
  if (scopeTenant !== null && values.tenant != null && values.tenant !== scopeTenant) {
    refuse("filter.tenant", `must be ${JSON.stringify(scopeTenant)} (the caller's tenant) or left out; got ${JSON.stringify(values.tenant)}`);
  }
  const tenant = scopeTenant ?? values.tenant ?? null;
  if (input.all !== undefined && typeof input.all !== "boolean") refuse("all", `must be a boolean; got ${JSON.stringify(input.all)}`);
  const named = Object.entries(input.filter).filter(([field, value]) => field !== "tenant" && value !== undefined && value !== null);
  if (named.length === 0 && input.all !== true) {
    const scope = tenant === null ? "every job of every tenant" : `every job of tenant ${JSON.stringify(tenant)}`;
    refuse("filter", `names no job field, so it covers ${scope}: give a field, or all: true to mean it`);
  }
  const states = BULK_ACTION_STATES[action];
  if (values.statuses != null && !values.statuses.some((status) => states.includes(status as (typeof states)[number]))) {
    refuse("filter.status", `selects no job ${action} touches: it acts on ${states.join(", ")} jobs only`);
  }
  if (action === "set_priority") {
    if (input.priority === undefined) refuse("priority", "is required for set_priority");
    checkPriority(input.priority, "priority");
  } else if (input.priority !== undefined) {
    refuse("priority", "is only for set_priority");
  }
  if (action === "move") {
    if (input.queue === undefined) refuse("queue", "is required for move");
    checkName(input.queue, "queue", ValidationError);
  } else if (input.queue !== undefined) {
    refuse("queue", "is only for move");
  }
  const requestedBy = input.requestedBy ?? null;
  if (
    requestedBy !== null &&
    (typeof requestedBy !== "string" || requestedBy.length === 0 || requestedBy.length > MAX_BULK_ACTION_REQUESTED_BY_LENGTH || /[\u0000-\u001f\u007f]/.test(requestedBy))
  ) {
    refuse("requestedBy", `must be 1 to ${MAX_BULK_ACTION_REQUESTED_BY_LENGTH} printable characters`);
  }
  const recorded = { action, tenant, filter: bulkActionFilterOf(input.filter), priority: input.priority ?? null, queue: input.queue ?? null };
  return { ...recorded, requestedBy, plan: planOf(recorded) };
}

/**
 * How the walks of a client's bulk actions are sized and paced; the
 * defaults are the constants in core/defaults.ts. Change them before
 * starting an operation (`conveyor.bulkActions.tuning`); tests shrink them.
 */
export interface BulkActionTuning {
  /**
   * Jobs per batch.
   * @defaultValue `BULK_ACTION_BATCH_SIZE` (500)
   */
  batchSize: number;
  /**
   * Rows of the primary key a batch reads at most, for states without an index in id order.
   * @defaultValue `BULK_ACTION_WINDOW_ROWS` (5,000)
   */
  windowRows: number;
  /**
   * The shortest pause between batches; 0: no pause at all, however long a batch took.
   * @defaultValue `BULK_ACTION_BATCH_PAUSE_MS` (50 ms)
   */
  pauseMs: number;
  /**
   * The lease each batch renews.
   * @defaultValue `BULK_ACTION_LEASE_MS` (30 s)
   */
  leaseMs: number;
  /**
   * The longest a batch waits for a row lock.
   * @defaultValue `BULK_ACTION_LOCK_TIMEOUT_MS` (200 ms)
   */
  lockTimeoutMs: number;
  /**
   * Failed tries of one batch in a row before the operation fails.
   * @defaultValue `BULK_ACTION_MAX_BATCH_TRIES` (20)
   */
  maxBatchTries: number;
}

interface Walk {
  promise: Promise<BulkAction>;
  listeners: Set<(operation: BulkAction) => void>;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Errors after which the same batch is worth trying again: nothing it did remains. */
function isRetryable(error: unknown): boolean {
  return isLockTimeout(error) || isTransientConflict(error) || isConnectionError(error);
}

/**
 * The walks of bulk actions this process runs: each an async loop of
 * batches (BulkActionStore.bulkActionBatch) with a pause between them
 * (BULK_ACTION_BATCH_PAUSE_MS, and at least BULK_ACTION_PAUSE_PER_BATCH_TIME
 * times what the batch took), so workers keep claiming while it runs. A
 * walk ends when its operation ends (done, cancelled, failed), when another
 * process took the operation over, or at `close()`, which lets go of the
 * operation so another process can resume it from its cursor.
 */
export class BulkActionRunner {
  /** How this process is named as the owner of the operations it runs. */
  readonly owner = `${hostname()}:${process.pid}:${uuidv7()}`;
  /** Batch size and pacing; change before starting an operation (tests do). */
  readonly tuning: BulkActionTuning = {
    batchSize: BULK_ACTION_BATCH_SIZE,
    windowRows: BULK_ACTION_WINDOW_ROWS,
    pauseMs: BULK_ACTION_BATCH_PAUSE_MS,
    leaseMs: BULK_ACTION_LEASE_MS,
    lockTimeoutMs: BULK_ACTION_LOCK_TIMEOUT_MS,
    maxBatchTries: BULK_ACTION_MAX_BATCH_TRIES,
  };
  private readonly walks = new Map<string, Walk>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly store: BulkActionStore,
    private readonly clock: DatabaseClock,
    private readonly logger: Logger,
  ) {}

  /** Check, count, store and start an operation (see BulkActions.start). */
  async start(input: BulkActionInput, scopeTenant: string | null): Promise<BulkAction> {
    this.refuseWhenClosed();
    const checked = checkBulkActionInput(input, scopeTenant);
    const walk = await this.store.bulkActionSurvey(checked.plan, BULK_ACTION_COUNT_TIMEOUT_MS);
    const { plan: _plan, ...recorded } = checked;
    const operation = await this.store.bulkActionInsert({
      ...recorded,
      id: uuidv7(await this.clock.now()),
      walk,
      owner: this.owner,
      leaseMs: this.tuning.leaseMs,
    });
    this.logger.info({ bulkActionId: operation.id, action: operation.action, tenant: operation.tenant, total: walk.total }, "bulk action started");
    this.launch(operation);
    return operation;
  }

  /** Run an operation here to its end, or follow the process that runs it (see BulkActions.run). */
  async run(id: string, options: RunBulkActionOptions = {}): Promise<BulkAction> {
    let seenTouched = -1;
    for (;;) {
      let walk = this.walks.get(id);
      if (!walk && !this.stopping.signal.aborted) {
        const taken = await this.store.bulkActionTake(id, this.owner, this.tuning.leaseMs);
        if (taken) walk = this.launch(taken);
      }
      if (walk) {
        const listener = options.onProgress;
        if (listener) walk.listeners.add(listener);
        let ended: BulkAction;
        try {
          ended = await walk.promise;
        } finally {
          if (listener) walk.listeners.delete(listener);
        }
        if (ended.status !== "running" || this.stopping.signal.aborted) return ended;
        continue; // another process took it over: follow it
      }
      const current = await this.store.bulkActionGet(id, null);
      if (!current) throw new NotFoundError(`bulk action ${id} not found`);
      if (current.status !== "running" || this.stopping.signal.aborted) return current;
      if (current.touched !== seenTouched) {
        seenTouched = current.touched;
        options.onProgress?.(current);
      }
      await pause(BULK_ACTION_WATCH_INTERVAL_MS, this.stopping.signal);
    }
  }

  /** Ask an operation to stop (see BulkActions.cancel). */
  async cancel(id: string, tenant: string | null): Promise<BulkAction> {
    const cancelled = await this.store.bulkActionCancel(id, tenant);
    if (cancelled) return cancelled;
    const current = await this.store.bulkActionGet(id, tenant);
    if (!current) throw new NotFoundError(`bulk action ${id} not found`);
    throw new ConflictError(`bulk action ${id} already ended (${current.status}); nothing changed`);
  }

  /** Take over the operations whose process is gone, and run them here. */
  async resume(limit: number): Promise<BulkAction[]> {
    if (this.stopping.signal.aborted) return [];
    const taken = await this.store.bulkActionTakeOver(this.owner, this.tuning.leaseMs, limit);
    for (const operation of taken) {
      this.logger.info({ bulkActionId: operation.id, action: operation.action, touched: operation.touched }, "bulk action resumed");
      this.launch(operation);
    }
    return taken;
  }

  /** Stop every walk between two batches and let go of its operation; resolves once all have stopped. */
  async close(): Promise<void> {
    this.stopping.abort();
    await Promise.all([...this.walks.values()].map((walk) => walk.promise.catch(() => {})));
  }

  private refuseWhenClosed(): void {
    if (this.stopping.signal.aborted) throw new ConfigError("this client is closed: it starts no bulk action");
  }

  /** The walk of an operation this process owns now; the running one when there is. */
  private launch(operation: BulkAction): Walk {
    const running = this.walks.get(operation.id);
    if (running) return running;
    const walk: Walk = { listeners: new Set(), promise: Promise.resolve(operation) };
    walk.promise = this.walk(operation, walk).finally(() => this.walks.delete(operation.id));
    // Nobody may be waiting for a walk in the background: an unexpected error is logged, never unhandled.
    walk.promise.catch((error: unknown) => this.logger.error({ err: error, bulkActionId: operation.id }, "bulk action walk stopped"));
    this.walks.set(operation.id, walk);
    return walk;
  }

  /** Batch after batch until the operation ends, is lost, or this client closes. Never rejects. */
  private async walk(start: BulkAction, walk: Walk): Promise<BulkAction> {
    let operation = start;
    const log = this.logger.child({ bulkActionId: operation.id, action: operation.action });
    const signal = this.stopping.signal;
    let plan: BulkBatchPlan;
    try {
      plan = planOf(operation);
    } catch (error) {
      return this.fail(operation, error, log);
    }
    let tries = 0;
    while (!signal.aborted) {
      const started = performance.now();
      let outcome: BulkBatchOutcome;
      try {
        outcome = await this.store.bulkActionBatch(operation.id, this.owner, plan, {
          limit: this.tuning.batchSize,
          windowRows: this.tuning.windowRows,
          leaseMs: this.tuning.leaseMs,
          lockTimeoutMs: this.tuning.lockTimeoutMs,
        });
        tries = 0;
      } catch (error) {
        tries += 1;
        if (!isRetryable(error) || tries >= this.tuning.maxBatchTries) return this.fail(operation, error, log);
        const delayMs = Math.min(ERROR_BACKOFF_MAX_MS, ERROR_BACKOFF_MIN_MS * 2 ** (tries - 1)) * (0.75 + Math.random() * 0.5);
        log.debug({ err: error, tries, delayMs }, "bulk action batch will be tried again");
        await pause(delayMs, signal);
        continue;
      }
      if (outcome.kind === "lost") {
        log.warn("bulk action taken over by another process; this one stops");
        return (await this.store.bulkActionGet(operation.id, null).catch(() => null)) ?? operation;
      }
      operation = outcome.operation;
      for (const listener of walk.listeners) {
        try {
          listener(operation);
        } catch (error) {
          log.error({ err: error }, "a bulk action progress listener threw");
        }
      }
      if (operation.status !== "running") {
        log.info({ status: operation.status, touched: operation.touched }, "bulk action ended");
        return operation;
      }
      // Longer when the batch was slow (a busy database): the walk keeps it busy at most a third of the time.
      const tookMs = performance.now() - started;
      await pause(this.tuning.pauseMs === 0 ? 0 : Math.max(this.tuning.pauseMs, tookMs * BULK_ACTION_PAUSE_PER_BATCH_TIME), signal);
    }
    await this.store.bulkActionRelease(operation.id, this.owner).catch((error: unknown) => {
      log.warn({ err: error }, "could not let go of the bulk action; another process resumes it once its lease lapses");
    });
    return operation;
  }

  /** End an operation `failed` with the error's message; when even that fails, leave it for a resume. */
  private async fail(operation: BulkAction, error: unknown, log: Logger): Promise<BulkAction> {
    const message = (error instanceof Error ? error.message : String(error)).split("\n")[0]!.slice(0, 1_000);
    log.error({ err: error }, "bulk action failed");
    try {
      return (await this.store.bulkActionFail(operation.id, this.owner, message)) ?? operation;
    } catch (failure) {
      log.warn({ err: failure }, "could not record the failure; another process resumes the bulk action once its lease lapses");
      return operation;
    }
  }
}
