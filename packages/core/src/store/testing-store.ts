import { NO_DEADLINE, WAKE_BATCH_SIZE } from "../core/defaults.js";
import type { JobExecution } from "../core/model.js";
import { type Pool, quoteIdent } from "./db.js";
import { bindQueries } from "./queries.js";
import { rowToExecution } from "./rows.js";
import { runQuery } from "./run-query.js";
import * as sql from "./sql/testing.js";
import { StepStore } from "./step-store.js";

/** One attempt a test's drain saw end, with what its job became. */
export interface EndedAttempt extends JobExecution {
  /** The job's kind. */
  kind: string;
  /** The job's status once the drain ended. */
  jobStatus: string;
  /** The job's payload, as stored. */
  payload: unknown;
  /** The job's result, when it succeeded. */
  result: unknown;
}

/**
 * The statements of the test helpers (`conveyor-jobs/testing`), bound to one
 * schema. Sent unnamed: tests run them a handful of times each. Waking
 * sleepers is the workers' own statement (StepStore), so a test wakes jobs
 * exactly as a worker does.
 */
export class TestingStore {
  private readonly text: Record<keyof typeof sql, string>;
  private readonly steps: StepStore;

  constructor(
    private readonly db: Pool,
    schema: string,
    pooled = false,
  ) {
    const quoted = quoteIdent(schema);
    this.text = Object.fromEntries(Object.entries(sql).map(([name, text]) => [name, text.replaceAll("{{schema}}", quoted)])) as Record<keyof typeof sql, string>;
    this.steps = new StepStore(db, bindQueries(schema, pooled));
  }

  private run(name: keyof typeof sql, values: unknown[] = []) {
    return runQuery(this.db, { name, text: this.text[name], prepared: false }, values);
  }

  /** Make retrying jobs due now; returns how many were moved. */
  async jobRetriesDueNow(): Promise<number> {
    return (await this.run("jobRetriesDueNow")).rows.length;
  }

  /** Jobs ready to run now, jobs running, jobs retrying (due or not), and sleeping jobs due within `sleepingWithinMs`. */
  async jobCountPending(sleepingWithinMs: number): Promise<{ ready: number; running: number; retrying: number; sleepingSoon: number }> {
    const { rows } = await this.run("jobCountPending", [sleepingWithinMs]);
    return { ready: rows[0].ready, running: rows[0].running, retrying: rows[0].retrying, sleepingSoon: rows[0].sleeping_soon };
  }

  /** Queue every sleeping job whose time has come, as a worker's waker does (StepStore.jobWakeSleeping); returns how many. */
  async jobWakeDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const woken = await this.steps.jobWakeSleeping(WAKE_BATCH_SIZE);
      total += woken.length;
      if (woken.length < WAKE_BATCH_SIZE) return total;
    }
  }

  /** Bring every job's timer `ms` closer (sql/testing.ts timeAdvance); returns how many jobs moved. */
  async timeAdvance(ms: number): Promise<number> {
    return (await this.run("timeAdvance", [ms, NO_DEADLINE])).rows[0].jobs;
  }

  /** The database's now(). */
  async clockNow(): Promise<Date> {
    return (await this.run("clockNow")).rows[0].now;
  }

  /** Attempts that ended at or after `since`, oldest first. */
  async executionListEndedSince(since: Date): Promise<EndedAttempt[]> {
    const { rows } = await this.run("executionListEndedSince", [since]);
    return rows.map((row) => ({ ...rowToExecution(row), kind: row.kind, jobStatus: row.job_status, payload: row.payload, result: row.result ?? null }));
  }

  /** Drop the schema and everything in it. */
  async schemaDrop(): Promise<void> {
    await this.run("schemaDrop");
  }
}
