import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REQUEUE_ACTIONS } from "../packages/core/src/core/requeues.js";
import { JOB_STATUSES, READY_STATUSES, TERMINAL_STATUSES } from "../packages/core/src/core/states.js";
import { NO_RECORD, RECORD_STATES, RECORD_TRANSITIONS } from "../packages/core/src/core/step-transitions.js";
import { eventSend, waitsOpenCount } from "../packages/core/src/store/sql/steps.js";
import { OPEN_WAIT } from "../packages/core/src/store/sql/status-sets.js";
import { REPO_ROOT } from "./helpers/child-process.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";

/**
 * Every state a statement names, a job's or a step record's, comes from the
 * state sets (packages/core/src/store/sql/status-sets.ts), never from a
 * word spelled in the SQL: a state renamed or added in core reaches every
 * statement. The partial indexes are the one other place states are
 * written (in migrations); their predicates must be the sets the
 * statements reach them with.
 */

const STORE = `${REPO_ROOT}/packages/core/src/store`;
// Job states, the step records' states, and the actions a requeue records (job_requeues.action).
const RECORD_WORDS = Object.values(RECORD_STATES).flat();
const WORD = new RegExp(`'(${[...new Set([...JOB_STATUSES, ...RECORD_WORDS, ...REQUEUE_ACTIONS])].join("|")})'`, "g");

let test: TestConveyor;
beforeAll(async () => {
  test = await createTestConveyor();
});
afterAll(() => test?.cleanup());

describe("state words in SQL", () => {
  it("the pattern catches every job state and every step record state", () => {
    for (const word of [...JOB_STATUSES, ...RECORD_WORDS]) expect(`state = '${word}'`.match(WORD), word).toEqual([`'${word}'`]);
  });

  it("appear in no statement or routine, only in the state sets", () => {
    const found: string[] = [];
    for (const dir of ["sql", "routines"]) {
      for (const file of readdirSync(`${STORE}/${dir}`).filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts") && name !== "status-sets.ts")) {
        readFileSync(`${STORE}/${dir}/${file}`, "utf8")
          .split("\n")
          .forEach((line, i) => {
            for (const match of line.matchAll(WORD)) found.push(`${dir}/${file}:${i + 1}: ${match[0]}`);
          });
      }
    }
    expect(found).toEqual([]);
  });

  it("in job_steps' CHECK are each kind's states of the step records' table", async () => {
    const { rows } = await test.conveyor.pool.query<{ def: string }>(
      `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conname = 'job_steps_state_valid' AND connamespace = $1::regnamespace`,
      [test.schema],
    );
    const allowed = Object.fromEntries(
      [...rows[0]!.def.matchAll(/kind = '([a-z_]+)'::text\) AND \(state = ANY \('\{([a-z_,]*)\}'::text\[\]\)/g)].map((match) => [match[1], match[2]!.split(",")]),
    );
    expect(allowed).toEqual(RECORD_STATES);
  });

  it("in the partial indexes' predicates are the sets the statements use", async () => {
    const { rows } = await test.conveyor.pool.query<{ name: string; predicate: string }>(
      `SELECT c.relname AS name, pg_get_expr(i.indpred, i.indrelid) AS predicate
       FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
       WHERE c.relnamespace = $1::regnamespace AND i.indpred IS NOT NULL
         AND c.relname NOT LIKE 'job_history_%' ORDER BY 1`,
      [test.schema],
    );
    const states = Object.fromEntries(
      rows
        .filter((row) => /\b(status|state)\b/.test(row.predicate))
        .map((row) => [row.name, [...row.predicate.matchAll(/'([a-z_]+)'::text/g)].map((match) => match[1]).sort()]),
    );
    // The statements that find open waits name them by OPEN_WAIT, which is the index's predicate below.
    for (const statement of [eventSend, waitsOpenCount]) expect(statement).toContain(`state IN (${OPEN_WAIT})`);
    const live = JOB_STATUSES.filter((status) => !TERMINAL_STATUSES.includes(status));
    const ready = [...READY_STATUSES].sort();
    expect(states).toEqual({
      bulk_actions_running_idx: ["running"],
      // The open waits sendEvent matches and the metrics count (status-sets.ts OPEN_WAIT).
      job_steps_open_waits_idx: RECORD_TRANSITIONS.wait.event_received.from.filter((from) => from !== NO_RECORD).sort(),
      // Counts of the live states but the ready ones and running (sql/queues.ts INDEXED_STATES):
      // running jobs are counted through jobs_running_lease_idx, so a claim writes no entry here.
      jobs_by_queue_state_tenant_idx: live.filter((status) => !READY_STATUSES.includes(status) && status !== "running").sort(),
      jobs_ready_by_limit_key_idx: ready,
      jobs_ready_by_queue_idx: ready,
      jobs_ready_idx: ready,
      jobs_running_by_limit_key_idx: ["running"],
      jobs_running_lease_idx: ["running"],
      jobs_sleeping_idx: ["sleeping"],
      jobs_waiting_idx: ["waiting"],
    });
  });
});
