import type { Job } from "../core/model.js";
import { boundedRead } from "./bounded-read.js";
import type { Pool, Queryable } from "./db.js";
import type { JobStore } from "./job-store.js";
import { runQuery } from "./run-query.js";
import { type JobFilterValues, jobCountStatement, jobEstimateStatement, jobFilterCondition } from "./sql/job-filter.js";

/**
 * Searches and counts of jobs by a filter (sql/job-filter.ts), each in a
 * transaction of its own whose statements stop after `timeoutMs`
 * (bounded-read.ts), so no filter can keep a connection reading the whole
 * table. Sent unnamed: each is planned for the filters it has.
 */
export class JobSearchStore {
  private readonly pool: Pool;
  private readonly schema: string;
  private readonly jobs: JobStore;

  constructor(pool: Pool, schema: string, jobs: JobStore) {
    this.pool = pool;
    this.schema = schema;
    this.jobs = jobs;
  }

  /** Jobs matching `filter`, newest first, older than `beforeId` when given; under `timeoutMs`. */
  jobSearch(filter: JobFilterValues, beforeId: string | null, limit: number, timeoutMs: number): Promise<Job[]> {
    return boundedRead(this.pool, timeoutMs, (db) => this.jobs.jobSearch(filter, beforeId, limit, db));
  }

  /** How many jobs match `filter`, counting `limit` at most, reached through indexes; under `timeoutMs`. */
  async jobCount(filter: JobFilterValues, limit: number, timeoutMs: number): Promise<number> {
    const values: unknown[] = [];
    const where = jobFilterCondition(filter, values);
    const text = jobCountStatement(this.schema, where, `$${values.push(limit)}`);
    const count = (db: Queryable) => runQuery(db, { name: "jobCount", text, prepared: false }, values);
    const { rows } = await boundedRead(this.pool, timeoutMs, count, { throughIndexes: true });
    return rows[0].count;
  }

  /** The planner's estimate of how many jobs match `filter` (never below 1: the planner's floor); under `timeoutMs`. */
  async jobEstimate(filter: JobFilterValues, timeoutMs: number): Promise<number> {
    const values: unknown[] = [];
    const text = jobEstimateStatement(this.schema, jobFilterCondition(filter, values));
    const { rows } = await boundedRead(this.pool, timeoutMs, (db) => runQuery(db, { name: "jobEstimate", text, prepared: false }, values));
    return Math.round(rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]);
  }
}
