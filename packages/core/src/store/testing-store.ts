import type { JobExecution } from "../core/model.js";
import { quoteIdent, type Queryable } from "./db.js";
import { rowToExecution } from "./rows.js";
import { runQuery } from "./run-query.js";
import * as sql from "./sql/testing.js";

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
 * schema. Sent unnamed: tests run them a handful of times each.
 */
export class TestingStore {
  private readonly text: Record<keyof typeof sql, string>;

  constructor(
    private readonly db: Queryable,
    schema: string,
  ) {
    const quoted = quoteIdent(schema);
    this.text = Object.fromEntries(Object.entries(sql).map(([name, text]) => [name, text.replaceAll("{{schema}}", quoted)])) as Record<keyof typeof sql, string>;
  }

  private run(name: keyof typeof sql, values: unknown[] = []) {
    return runQuery(this.db, { name, text: this.text[name], prepared: false }, values);
  }

  /** Make retrying jobs due now; returns how many were moved. */
  async jobRetriesDueNow(): Promise<number> {
    return (await this.run("jobRetriesDueNow")).rows.length;
  }

  /** Jobs ready to run now, jobs running, and jobs retrying (due or not). */
  async jobCountPending(): Promise<{ ready: number; running: number; retrying: number }> {
    const { rows } = await this.run("jobCountPending");
    return { ready: rows[0].ready, running: rows[0].running, retrying: rows[0].retrying };
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
