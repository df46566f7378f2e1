import { COPY_CHUNK_ROWS, DEFAULT_QUEUE, DEFAULT_TENANT, ENQUEUE_CHUNK_ROWS } from "../core/defaults.js";
import { ValidationError } from "../core/errors.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import type { Pool, Queryable } from "../store/db.js";
import type { JobInsertRow } from "../store/job-insert-row.js";
import type { Store } from "../store/store.js";
import { withTransaction } from "../store/transaction.js";
import type { ProducerInfo, Tracing } from "../tracing/tracing.js";
import { checkEnqueueOptions, type EnqueueOptions, insertJobs, JOB_ROW_OPTION_FIELDS, type JobRowOptions, markCreated, prepareInsert } from "./enqueue.js";
import { checkKnownFields, type KnownFields } from "../core/validate.js";
import type { EnqueuedJob } from "./enqueued-job.js";
import { withEnqueueRetry } from "./enqueue-race.js";
import type { GraphEnqueuer } from "./enqueue-flow.js";
import type { PayloadFor } from "./flow-input.js";
import { chooseInsertStrategy } from "./insert-strategy.js";

/**
 * One entry of `enqueueMany` (dependencies are `enqueue`'s and
 * `flows.enqueue`'s). `J`: the job as given, which types the payload.
 */
export type EnqueueManyItem<J extends AnyJobDefinition | string = AnyJobDefinition | string> = {
  /** The job definition, or its kind name. */
  job: J;
  /** The payload, validated by the kind's schema (typed by the definition, as `enqueue` types it). */
  payload: PayloadFor<J>;
} & JobRowOptions;

const ITEM_FIELDS: KnownFields<EnqueueManyItem> = { ...JOB_ROW_OPTION_FIELDS, job: true, payload: true };

/**
 * How the client's `enqueue` and `enqueueMany` write jobs: one row in one
 * statement, a batch in one statement, in chunks inside one transaction,
 * or by COPY (the choice is made in insert-strategy.ts); a job with
 * dependencies goes to the graph writer (enqueue-flow.ts).
 */
export class JobEnqueuer {
  constructor(
    private readonly store: Store,
    private readonly pool: Pool,
    private readonly jobs: ReadonlyMap<string, AnyJobDefinition>,
    private readonly definitionOf: (job: AnyJobDefinition | string) => AnyJobDefinition,
    private readonly graphs: GraphEnqueuer,
    private readonly tracing: Tracing,
  ) {}

  /** One job (see ConveyorClient.enqueue); with `dependsOn`, through the graph writer. */
  async enqueue(job: AnyJobDefinition | string, payload: unknown, options: EnqueueOptions = {}): Promise<EnqueuedJob> {
    checkEnqueueOptions(options);
    if (options.dependsOn !== undefined) return this.graphs.enqueueDependent(this.definitionOf(job), payload, options);
    const { tx, dependsOn: _dependsOn, onDependencyFailure: _policy, ...rest } = options;
    const row = await prepareInsert(this.definitionOf(job), payload, rest, await this.store.clock.now());
    const span = { queue: row.queue, kind: row.kind, tenant: row.tenant, jobId: row.id, count: 1 };
    return this.tracing.produce(span, options.traceContext, async (traceContext) => {
      if (traceContext !== undefined) row.traceContext = traceContext;
      // One row is always one statement (insert-strategy.ts): nothing written before it to undo.
      return (await this.insertWithRetry([row], tx))[0]!;
    });
  }

  /** Many jobs, all or nothing (see ConveyorClient.enqueueMany). */
  async enqueueMany(items: readonly EnqueueManyItem[], options: { tx?: Queryable } = {}): Promise<EnqueuedJob[]> {
    checkKnownFields(options, { tx: true }, "an enqueueMany option");
    if (items.length === 0) return [];
    // One PRODUCER span for the call; every job stores its context (an item's own traceContext only without a span).
    return this.tracing.produce(this.batchSpan(items), items[0]!.traceContext, (traceContext) => this.enqueueManyIn(items, options.tx, traceContext));
  }

  /**
   * What an `enqueueMany` span describes: the first job's queue, kind and
   * tenant (a batch is usually of one kind), and the count. An unknown kind
   * is refused later, by validation, which names the item.
   */
  private batchSpan(items: readonly EnqueueManyItem[]): ProducerInfo {
    const first = items[0]!;
    const definition = typeof first.job === "string" ? this.jobs.get(first.job) : first.job;
    return {
      queue: first.queue ?? definition?.queue ?? DEFAULT_QUEUE,
      kind: typeof first.job === "string" ? first.job : first.job.kind,
      tenant: first.tenant ?? DEFAULT_TENANT,
      count: items.length,
    };
  }

  /** `traceContext`: the PRODUCER span's, stored with every job instead of the items' own; undefined without a span. */
  private async enqueueManyIn(items: readonly EnqueueManyItem[], tx: Queryable | undefined, traceContext: string | undefined): Promise<EnqueuedJob[]> {
    switch (chooseInsertStrategy({ rows: items.length, inCallerTransaction: tx !== undefined, keyed: items.some(hasKey) })) {
      case "copy":
        return this.copyIn(items, traceContext);
      case "chunked": {
        const run = (db: Queryable) => this.insertInChunks(items, db, traceContext);
        return tx ? run(tx) : withTransaction(this.pool, run);
      }
      case "keyed": {
        const rows = await this.prepareRows(items, 0, items.length, traceContext);
        return withTransaction(this.pool, (client) => this.insertWithRetry(rows, client));
      }
      case "statement":
        return this.insertWithRetry(await this.prepareRows(items, 0, items.length, traceContext), tx);
    }
  }

  /** Write a large batch of jobs without keys by COPY, validating each chunk while the server inserts the one before. */
  private async copyIn(items: readonly EnqueueManyItem[], traceContext: string | undefined): Promise<EnqueuedJob[]> {
    const prepare = (from: number) => this.prepareRows(items, from, Math.min(from + COPY_CHUNK_ROWS, items.length), traceContext);
    async function* chunks(): AsyncGenerator<JobInsertRow[]> {
      for (let from = 0; from < items.length; from += COPY_CHUNK_ROWS) yield await prepare(from);
    }
    return (await this.store.jobs.jobCopyMany(chunks())).map(markCreated);
  }

  /**
   * Insert a large batch chunk by chunk on one transaction's connection,
   * validating and encoding each chunk while the previous one is in the
   * database, so the client's work and the server's overlap instead of
   * taking turns.
   */
  private async insertInChunks(items: readonly EnqueueManyItem[], db: Queryable, traceContext: string | undefined): Promise<EnqueuedJob[]> {
    const results: EnqueuedJob[] = [];
    // Settled into a value at once, so a failed insert is never an unhandled
    // rejection while the next chunk is being validated.
    let inFlight: Promise<{ jobs: EnqueuedJob[] } | { error: unknown }> | null = null;
    const collect = async () => {
      const outcome = await inFlight!;
      inFlight = null;
      if ("error" in outcome) throw outcome.error;
      for (const job of outcome.jobs) results.push(job);
    };
    try {
      for (let start = 0; start < items.length; start += ENQUEUE_CHUNK_ROWS) {
        const rows = await this.prepareRows(items, start, Math.min(start + ENQUEUE_CHUNK_ROWS, items.length), traceContext);
        if (inFlight) await collect();
        inFlight = this.insertWithRetry(rows, db).then(
          (jobs) => ({ jobs }),
          (error: unknown) => ({ error }),
        );
      }
      await collect();
      return results;
    } finally {
      // A chunk that failed validation still waits for the insert in flight,
      // so the caller's rollback never races it.
      if (inFlight) await inFlight;
    }
  }

  /** Validate and encode items [from, to), naming a bad one by its index in the whole call; `traceContext`, when given, is stored with each. */
  private async prepareRows(items: readonly EnqueueManyItem[], from: number, to: number, traceContext?: string): Promise<JobInsertRow[]> {
    await this.store.clock.now(); // measured before the first id, then kept fresh in the background
    const rows: JobInsertRow[] = [];
    for (let index = from; index < to; index++) {
      const item = items[index]!;
      try {
        if (item !== null && typeof item === "object" && "dependsOn" in item) {
          throw new ValidationError("dependsOn is not taken by enqueueMany: use enqueue or flows.enqueue", [{ path: "dependsOn", message: "not here" }]);
        }
        checkKnownFields(item, ITEM_FIELDS, "a field of an enqueueMany job");
        const { job, payload, ...rest } = item;
        const row = await prepareInsert(this.definitionOf(job), payload, rest, this.store.clock.nowKnown());
        if (traceContext !== undefined) row.traceContext = traceContext;
        rows.push(row);
      } catch (error) {
        if (error instanceof ValidationError) {
          throw new ValidationError(`jobs[${index}]: ${error.message}`, error.issues.map((i) => ({ ...i, path: `jobs.${index}.${i.path}` })));
        }
        throw error;
      }
    }
    return rows;
  }

  // An idempotency race that needs another insert can only repeat while the
  // competing transaction keeps rolling back.
  private insertWithRetry(rows: Parameters<typeof insertJobs>[1], db?: Queryable): Promise<EnqueuedJob[]> {
    return withEnqueueRetry(() => insertJobs(this.store.jobs, rows, db));
  }
}

/** An item that COPY cannot write: its key may answer with an existing job. */
function hasKey(item: EnqueueManyItem): boolean {
  return item.idempotencyKey != null || item.unique != null;
}
