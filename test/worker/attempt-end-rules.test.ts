/**
 * The rules of an attempt's end, decided in core and applied in SQL, run
 * through both: every decision decideOutcome makes for a worker's write
 * (jobEndAttempts), with and without a cancel requested, against a real
 * job row. What the row, its execution record and the dead-letter queue
 * show must be what withCancelRequest says: the statement applies the
 * cancel rule under its lock, from the same transition table.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveBackoff } from "../../packages/core/src/core/backoff.js";
import { PermanentError, RetryAfter } from "../../packages/core/src/core/errors.js";
import { type AttemptEnding, decideOutcome, type OutcomeInputs, withCancelRequest } from "../../packages/core/src/core/outcome.js";
import { type Conveyor, defineJob } from "../../packages/core/src/index.js";
import type { AttemptEnd } from "../../packages/core/src/store/job-store.js";
import { createTestConveyor, storeOf } from "../helpers/database.js";
import { emptyPayload, silent, sql } from "./support.js";

const job = defineJob({ kind: "end-rules", schema: emptyPayload, maxAttempts: 3, handler: () => {} });
const backoff = resolveBackoff({ baseMs: 60_000, capMs: 60_000, jitter: 0 });

/** Every end a worker writes through jobEndAttempts (a success and a lost lease take other paths). */
const ENDINGS: Array<{ name: string; ending: AttemptEnding; inputs: OutcomeInputs }> = [
  { name: "threw, attempts left", ending: { kind: "threw", error: new Error("boom") }, inputs: { attempt: 1, maxAttempts: 3, backoff } },
  { name: "threw, attempts spent", ending: { kind: "threw", error: new Error("boom") }, inputs: { attempt: 3, maxAttempts: 3, backoff } },
  { name: "permanent error", ending: { kind: "threw", error: new PermanentError("gone") }, inputs: { attempt: 1, maxAttempts: 3, backoff } },
  { name: "timeout", ending: { kind: "forced", reason: "timeout" }, inputs: { attempt: 1, maxAttempts: 3, backoff } },
  { name: "retry after", ending: { kind: "returned", value: new RetryAfter(60_000) }, inputs: { attempt: 1, maxAttempts: 3, backoff } },
  { name: "shutdown", ending: { kind: "forced", reason: "shutdown" }, inputs: { attempt: 1, maxAttempts: 3, backoff } },
];

describe("an attempt's end, decided in core and applied by jobEndAttempts", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [job], logger: silent }));
  });
  afterAll(() => cleanup());

  let queues = 0;
  for (const { name, ending, inputs } of ENDINGS) {
    for (const cancelRequested of [false, true]) {
      it(`${name}${cancelRequested ? ", cancel requested" : ""}`, async () => {
        const queue = `end-rules-${++queues}`;
        const { id } = await conveyor.enqueue(job, {}, { queue });
        const [claimed] = await storeOf(conveyor).jobClaim("rules-worker", 1, ["end-rules"], [queue], 60_000);
        expect(claimed!.id).toBe(id);
        if (cancelRequested) expect((await conveyor.cancel(id)).outcome).toBe("cancel_requested");

        const decision = decideOutcome(ending, inputs);
        const expected = withCancelRequest(decision, cancelRequested);
        const end: AttemptEnd = {
          jobId: id,
          executionId: claimed!.executionId,
          outcome: decision.outcome as AttemptEnd["outcome"],
          error: JSON.stringify({ name: "Error", message: name }),
          event: decision.event as AttemptEnd["event"],
          delayMs: decision.delayMs,
        };
        const [moved] = await storeOf(conveyor).jobEndAttempts([end]);

        expect(moved!.status).toBe(expected.nextStatus);
        expect(moved!.attempts).toBe(expected.countsAttempt ? 1 : 0);
        const after = await conveyor.getJob(id);
        expect(after!.executions.map((e) => e.outcome)).toEqual([expected.outcome]);
        const { rows } = await sql(conveyor, `SELECT (run_at - updated_at) > interval '30 seconds' AS delayed FROM {{schema}}.jobs WHERE id = $1`, [id]);
        if (expected.nextStatus === "retrying" || expected.nextStatus === "queued") expect(rows[0].delayed).toBe(expected.delayMs > 0);
        expect(after!.finishedAt !== null).toBe(["succeeded", "cancelled", "dead"].includes(expected.nextStatus!));
        const { rows: letters } = await sql(conveyor, `SELECT dead_reason FROM {{schema}}.jobs WHERE id = $1 AND dead_letter_id IS NOT NULL`, [id]);
        expect(letters.map((row: { dead_reason: string }) => row.dead_reason)).toEqual(expected.nextStatus === "dead" ? [expected.deadReason] : []);
        if (after!.status !== "cancelled" && after!.status !== "dead") await conveyor.cancel(id);
      });
    }
  }
});
