import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pino from "pino";
import type { ConveyorOptions } from "../client/options.js";
import { Conveyor } from "../conveyor.js";
import { DEFAULT_DRAIN_TIMEOUT_MS, DRAIN_CONCURRENCY, DRAIN_POLL_INTERVAL_MS, DRAIN_SLEEP_HORIZON_MS } from "../core/defaults.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import { checkDelayMs, checkKnownFields } from "../core/validate.js";
import { createMigratedSchema } from "../store/migrate.js";
import { type EndedAttempt, TestingStore } from "../store/testing-store.js";
import type { WorkerOptions } from "../worker/worker.js";
import { expectJob, type JobMatch } from "./expect-job.js";
import { loadOptionalPackage } from "../optional-packages.js";

export type { EndedAttempt } from "../store/testing-store.js";

export { DEFAULT_DRAIN_TIMEOUT_MS, DRAIN_SLEEP_HORIZON_MS } from "../core/defaults.js";

/** Options of `createTestConveyor`: a Conveyor's, except where its schema and database come from. */
export interface TestConveyorOptions extends Omit<ConveyorOptions, "schema" | "connectionString" | "pool"> {
  /**
   * The database. Default: `process.env.DATABASE_URL`, else an embedded
   * PostgreSQL started once per process with its data under
   * `.conveyor/test-postgres` (stopped when the process exits).
   */
  connectionString?: string;
  /** Leave the schema in place at `close()`, to inspect it. Default false. */
  keepSchema?: boolean;
  /** Options of the worker `drain()` runs. Default: concurrency `DRAIN_CONCURRENCY` (10), a poll every `DRAIN_POLL_INTERVAL_MS` (10) ms, no retention. */
  worker?: WorkerOptions;
  /** Default: a silent pino logger. */
  logger?: ConveyorOptions["logger"];
}

/** Options of `drain()`. */
export interface DrainOptions {
  /** Make retrying jobs due at once instead of waiting out their backoff. Default true. */
  skipRetryDelays?: boolean;
  /**
   * Give up (and throw) after this long with jobs still ready or running.
   * @defaultValue `DEFAULT_DRAIN_TIMEOUT_MS` (30 s)
   */
  timeoutMs?: number;
}

/** What `drain()` ran. */
export interface DrainResult {
  /** Every attempt that ended during the drain, oldest first: its job, kind, number, outcome and error. */
  attempts: EndedAttempt[];
  /**
   * Each job that ran, once, with the status it ended the drain in
   * (`succeeded`, `dead`, `cancelled`, `sleeping` for a durable job that
   * sleeps or waits past the drain, or `retrying` when delays were not skipped).
   */
  jobs: Array<{
    /** The job's id. */
    id: string;
    /** Its kind. */
    kind: string;
    /** Its status when the drain ended. */
    status: string;
    /** Attempts it has had. */
    attempts: number;
    /** What its handler returned, when it succeeded; else null. */
    result: unknown;
  }>;
}

/**
 * A Conveyor on a fresh schema of its own, for one test (or one file),
 * with helpers: `drain()` runs every ready job now, `advanceTime(ms)` brings
 * sleeping and delayed jobs closer, `expectEnqueued` and
 * `expectNotEnqueued` assert what was enqueued. Call `close()` when done:
 * it drops the schema and closes the pool. Works with any test runner; the
 * assertions throw node's `AssertionError`.
 */
export class TestConveyor {
  /** The Conveyor under test: enqueue with it, or hand it to the code under test. */
  readonly conveyor: Conveyor;
  /** The schema it lives in, `test_<hex>`. */
  readonly schema: string;
  private readonly testing: TestingStore;
  private closed: Promise<void> | undefined;

  /** Made by `createTestConveyor`. */
  constructor(
    conveyor: Conveyor,
    private readonly settings: { keepSchema: boolean; worker: WorkerOptions },
  ) {
    this.conveyor = conveyor;
    this.schema = conveyor.options.schema;
    this.testing = new TestingStore(conveyor.pool, this.schema, conveyor.options.pooler === "transaction");
  }

  /**
   * Run every job that is ready now, and the jobs those enqueue, until none
   * is ready or running: a worker is started, run to quiet and stopped.
   * Retries are run too, at once unless `skipRetryDelays` is false. Jobs
   * enqueued with a delay or a future `runAt` are not ready, and wait (see `advanceTime`).
   *
   * Durable jobs: sleeping jobs whose time has come are queued and run, as
   * a worker's waker would, and so are jobs woken by `sendEvent`. The drain
   * also waits for sleeps and wait deadlines due within
   * `DRAIN_SLEEP_HORIZON_MS` (1 s), so a job that sleeps a few ms finishes
   * within one drain; a job that sleeps longer (or waits for an event with
   * no deadline) ends the drain `sleeping`: `advanceTime` or `sendEvent`,
   * then drain again. Returns every attempt that ended, and each job's final status.
   */
  async drain(options: DrainOptions = {}): Promise<DrainResult> {
    checkKnownFields(options, { skipRetryDelays: true, timeoutMs: true }, "a drain option");
    const skipRetryDelays = options.skipRetryDelays ?? true;
    const timeoutMs = options.timeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    const since = await this.testing.clockNow();
    const worker = this.conveyor.worker({ concurrency: DRAIN_CONCURRENCY, pollIntervalMs: DRAIN_POLL_INTERVAL_MS, retention: false, ...this.settings.worker });
    await worker.start();
    try {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (skipRetryDelays) await this.testing.jobRetriesDueNow();
        // The worker's own waker runs only every wakeIntervalMs; a drain wakes due sleepers at every check.
        await this.testing.jobWakeDue();
        const { ready, running, retrying, sleepingSoon } = await this.testing.jobCountPending(DRAIN_SLEEP_HORIZON_MS);
        // A job that just failed is retrying: with delays skipped it is still work to do.
        if (ready === 0 && running === 0 && (!skipRetryDelays || retrying === 0) && sleepingSoon === 0 && worker.activeCount === 0) break;
        if (Date.now() > deadline) {
          throw new Error(
            `drain(): after ${timeoutMs} ms, ${ready} job(s) are still ready, ${running} running and ${sleepingSoon} about to wake (a job that enqueues itself forever?)`,
          );
        }
        await sleep(5);
      }
    } finally {
      await worker.stop();
    }
    const attempts = await this.testing.executionListEndedSince(since);
    const jobs = new Map<string, DrainResult["jobs"][number]>();
    for (const attempt of attempts) {
      jobs.set(attempt.jobId, { id: attempt.jobId, kind: attempt.kind, status: attempt.jobStatus, attempts: attempt.attempt, result: attempt.result });
    }
    return { attempts, jobs: [...jobs.values()] };
  }

  /**
   * Make `ms` pass for the schema's jobs, without touching any clock: every
   * sleeping job and its sleep's wake time or wait's deadline comes `ms`
   * closer, and so does every queued or retrying job not due yet (enqueued
   * with a delay or a future `runAt`, or waiting out a retry's backoff). The
   * next `drain()` then runs what became due: a sleep that ended, a
   * `waitForEvent` whose deadline passed (it returns null). A wait without a
   * deadline keeps waiting for its event. Cron schedules and leases are not
   * moved, nor any job's other times (`createdAt`, a record's `startedAt`).
   * One statement: a job and its records move together. Returns how many
   * jobs moved. `ms` is 0 to `MAX_DELAY_MS`.
   *
   * @example
   * await t.conveyor.enqueue(trial, { email });
   * await t.drain();              // runs to its 3-day sleep
   * await t.advanceTime(3 * DAY);
   * await t.drain();              // wakes it and runs it to its end
   */
  async advanceTime(ms: number): Promise<number> {
    checkDelayMs(ms, "advanceTime(ms)");
    return this.testing.timeAdvance(ms);
  }

  /**
   * Assert that a job of this kind was enqueued, matching `match` (payload
   * fields given must match deeply, others are ignored); returns the newest
   * such job. Throws an `AssertionError` listing the jobs of the kind found.
   */
  expectEnqueued(job: AnyJobDefinition | string, match: JobMatch = {}) {
    return expectJob(this.conveyor, job, match, true);
  }

  /** Assert that no job of this kind matching `match` was enqueued (any status). Throws an `AssertionError` naming the one found. */
  async expectNotEnqueued(job: AnyJobDefinition | string, match: JobMatch = {}): Promise<void> {
    await expectJob(this.conveyor, job, match, false);
  }

  /** Drop the schema (unless `keepSchema`) and close the pool; safe to call twice. */
  close(): Promise<void> {
    return (this.closed ??= (async () => {
      try {
        if (!this.settings.keepSchema) await this.testing.schemaDrop();
      } finally {
        await this.conveyor.close();
      }
    })());
  }
}

/**
 * A Conveyor on a new schema, created with every migration applied in one
 * transaction (about 40 ms, against 60 ms for `migrate()`; see
 * docs/testing.md), on `DATABASE_URL` or an embedded PostgreSQL.
 *
 * @example
 * const t = await createTestConveyor({ jobs: [sendEmail] });
 * await signUp(t.conveyor, "ada@example.com");
 * await t.expectEnqueued(sendEmail, { payload: { to: "ada@example.com" } });
 * await t.close();
 */
export async function createTestConveyor(options: TestConveyorOptions = {}): Promise<TestConveyor> {
  const { connectionString, keepSchema, worker, ...conveyorOptions } = options;
  const schema = `test_${randomBytes(6).toString("hex")}`;
  const conveyor = new Conveyor({
    poolSize: 4,
    logger: pino({ level: "silent" }),
    ...conveyorOptions,
    connectionString: connectionString ?? (await defaultDatabase()),
    schema,
  });
  try {
    await createMigratedSchema(conveyor.pool, schema);
  } catch (error) {
    await conveyor.close();
    throw error;
  }
  return new TestConveyor(conveyor, { keepSchema: keepSchema ?? false, worker: worker ?? {} });
}

let embedded: Promise<string> | undefined;

/** DATABASE_URL, or an embedded server started once per process (it stops when the process exits). */
async function defaultDatabase(): Promise<string> {
  const fromEnvironment = process.env.DATABASE_URL;
  if (fromEnvironment) return fromEnvironment;
  embedded ??= loadOptionalPackage(
    "conveyor-jobs-embedded",
    "DATABASE_URL is not set, and the embedded PostgreSQL comes in the conveyor-jobs-embedded package",
  ).then(async ({ startEmbeddedPostgres }) => {
    const server = await startEmbeddedPostgres({ dataDir: join(process.cwd(), ".conveyor", "test-postgres") });
    return server.connectionString;
  });
  return embedded;
}
