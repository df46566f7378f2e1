import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Conveyor, defineJob, PermanentError, RetryAfter, type Worker } from "../../packages/core/src/index.js";
import { createTestConveyor } from "../helpers/database.js";
import { emptyPayload, silent, sql } from "./support.js";
import { z } from "zod";
import { waitFor } from "../helpers/wait-for.js";

const BASE_MS = 150;
let requeueShouldSucceed = false;
const abortReasons: string[] = [];

const alwaysFails = defineJob({
  kind: "always-fails",
  schema: emptyPayload,
  maxAttempts: 4,
  backoff: { baseMs: BASE_MS, capMs: 400, jitter: 0 },
  handler: () => {
    throw new Error("upstream said no");
  },
});
const jittered = defineJob({
  kind: "jittered",
  schema: emptyPayload,
  maxAttempts: 2,
  backoff: { baseMs: 2_000, jitter: 0.5 },
  handler: () => {
    throw new Error("again");
  },
});
const permanent = defineJob({
  kind: "permanent",
  schema: emptyPayload,
  handler: () => {
    if (requeueShouldSucceed) return "fixed";
    throw new PermanentError("account deleted");
  },
});
const snoozes = defineJob({
  kind: "snoozes",
  schema: z.object({ times: z.number() }),
  maxAttempts: 1,
  async handler({ payload, job }) {
    snoozeRuns.set(job.id, (snoozeRuns.get(job.id) ?? 0) + 1);
    if (snoozeRuns.get(job.id)! <= payload.times) {
      if (snoozeRuns.get(job.id)! % 2 === 0) throw new RetryAfter(50);
      return new RetryAfter(50);
    }
    return "awake";
  },
});
const snoozeRuns = new Map<string, number>();
const hangs = defineJob({
  kind: "hangs",
  schema: emptyPayload,
  maxAttempts: 2,
  timeoutMs: 200,
  backoff: { baseMs: 10, jitter: 0 },
  handler: ({ signal }) =>
    new Promise(() => {
      signal.addEventListener("abort", () => abortReasons.push((signal.reason as Error).name));
    }),
});
const throwsOddThings = defineJob({
  kind: "throws-odd-things",
  schema: z.object({ what: z.enum(["string", "undefined", "null", "object", "nul"]) }),
  maxAttempts: 1,
  handler: ({ payload }) => {
    if (payload.what === "string") throw "plain string";
    if (payload.what === "undefined") throw undefined;
    if (payload.what === "null") throw null;
    if (payload.what === "nul") throw new Error("bad\u0000byte \ud800 here");
    throw { code: 42 };
  },
});
const badResult = defineJob({ kind: "bad-result", schema: emptyPayload, maxAttempts: 1, handler: () => ({ big: 10n }) });

describe("attempt outcomes", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  let worker: Worker;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({
      jobs: [alwaysFails, jittered, permanent, snoozes, hangs, throwsOddThings, badResult],
      logger: silent,
    }));
    worker = conveyor.worker({ concurrency: 8, pollIntervalMs: 20, logger: silent });
    await worker.start();
  });
  afterAll(async () => {
    await worker.stop({ graceMs: 0 });
    await cleanup();
  });

  const job = (id: string) => conveyor.getJob(id).then((j) => j!);

  it("retries with exponential backoff stored as run_at, then dead-letters with the whole history", async () => {
    const { id } = await conveyor.enqueue(alwaysFails, {});
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      // Each failure sets run_at = (time of the failure write) + delay, in one statement on the database clock.
      const { rows } = await waitFor(`retry ${attempt}`, async () => {
        const result = await sql(
          conveyor,
          `SELECT extract(epoch FROM (j.run_at - e.finished_at)) * 1000 AS delay_ms
             FROM {{schema}}.jobs j JOIN {{schema}}.job_attempts e ON e.job_id = j.id AND e.attempt = $2
            WHERE j.id = $1 AND j.status = 'retrying' AND j.attempts = $2`,
          [id, attempt],
        );
        return result.rows.length ? result : null;
      }, 10_000, 5);
      delays.push(Math.round(Number(rows[0].delay_ms)));
    }
    expect(delays).toEqual([BASE_MS, BASE_MS * 2, 400]); // 150, 300, then capped at 400
    await waitFor("dead", async () => (await job(id)).status === "dead");
    const dead = await job(id);
    expect(dead.attempts).toBe(4);
    expect(dead.lastError).toMatchObject({ name: "Error", message: "upstream said no" });
    expect(dead.executions.map((e) => e.outcome)).toEqual(["failed", "failed", "failed", "failed"]);
    const letters = await conveyor.deadLetters.list({ kind: "always-fails" });
    expect(letters.items).toHaveLength(1);
    expect(letters.items[0]).toMatchObject({ jobId: id, reason: "attempts_exhausted", attempts: 4, payload: {} });
    expect(letters.items[0]!.history.map((h) => [h.attempt, h.outcome])).toEqual([[1, "failed"], [2, "failed"], [3, "failed"], [4, "failed"]]);
    expect(letters.items[0]!.history.every((h) => h.finishedAt !== null && h.error?.message === "upstream said no")).toBe(true);
  });

  it("jitter only shortens the delay, within the configured share", async () => {
    const { id } = await conveyor.enqueue(jittered, {});
    const { rows } = await waitFor("first failure", async () => {
      const result = await sql(
        conveyor,
        `SELECT extract(epoch FROM (j.run_at - e.finished_at)) * 1000 AS delay_ms FROM {{schema}}.jobs j
           JOIN {{schema}}.job_attempts e ON e.job_id = j.id WHERE j.id = $1 AND j.status = 'retrying'`,
        [id],
      );
      return result.rows.length ? result : null;
    });
    expect(Number(rows[0].delay_ms)).toBeGreaterThanOrEqual(1_000);
    expect(Number(rows[0].delay_ms)).toBeLessThanOrEqual(2_000);
    await conveyor.cancel(id);
  });

  it("a PermanentError dead-letters at once, and requeue runs the same job again with fresh attempts", async () => {
    requeueShouldSucceed = false;
    const { id } = await conveyor.enqueue(permanent, {});
    await waitFor("dead", async () => (await job(id)).status === "dead");
    const dead = await job(id);
    expect(dead.attempts).toBe(1);
    const [letter] = (await conveyor.deadLetters.list({ kind: "permanent" })).items;
    expect(letter).toMatchObject({ jobId: id, reason: "permanent_error", lastError: { name: "PermanentError", message: "account deleted" } });
    expect(letter!.history).toHaveLength(1);
    expect(await conveyor.deadLetters.get(letter!.id)).toMatchObject({ id: letter!.id, jobId: id });

    requeueShouldSucceed = true;
    const requeued = await conveyor.deadLetters.requeue(letter!.id);
    expect(requeued).toMatchObject({ id, status: "queued", attempts: 0 });
    await waitFor("requeued job to succeed", async () => (await job(id)).status === "succeeded");
    const done = await job(id);
    expect(done.result).toBe("fixed");
    expect(done.executions.map((e) => e.outcome)).toEqual(["failed", "succeeded"]);
    expect(await conveyor.deadLetters.get(letter!.id)).toBeNull();
    await expect(conveyor.deadLetters.requeue(letter!.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("purge deletes a dead job with its history", async () => {
    requeueShouldSucceed = false;
    const { id } = await conveyor.enqueue(permanent, {});
    await waitFor("dead", async () => (await job(id)).status === "dead");
    const [letter] = (await conveyor.deadLetters.list({ kind: "permanent" })).items;
    await conveyor.deadLetters.purge(letter!.id);
    expect(await conveyor.getJob(id)).toBeNull();
    expect((await sql(conveyor, `SELECT 1 FROM {{schema}}.job_attempts WHERE job_id = $1`, [id])).rows).toHaveLength(0);
    await expect(conveyor.deadLetters.purge(letter!.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("retry-after (returned or thrown) runs again after the delay without spending attempts", async () => {
    const { id } = await conveyor.enqueue(snoozes, { times: 3 }); // maxAttempts 1: any counted failure would kill it
    await waitFor("awake", async () => (await job(id)).status === "succeeded");
    const done = await job(id);
    expect(done.attempts).toBe(1);
    expect(done.result).toBe("awake");
    expect(done.executions.map((e) => e.outcome)).toEqual(["retry_after", "retry_after", "retry_after", "succeeded"]);
  });

  it("a handler that hangs past timeoutMs has its signal aborted and the attempt fails as a timeout", async () => {
    const { id } = await conveyor.enqueue(hangs, {});
    await waitFor("dead after two timeouts", async () => (await job(id)).status === "dead", 10_000);
    const dead = await job(id);
    expect(dead.executions.map((e) => e.outcome)).toEqual(["timeout", "timeout"]);
    expect(dead.lastError).toMatchObject({ name: "JobTimeoutError" });
    expect(abortReasons).toEqual(["JobTimeoutError", "JobTimeoutError"]);
  });

  it("non-Error throws and unstorable text are recorded readably", async () => {
    const ids = await Promise.all(
      (["string", "undefined", "null", "object", "nul"] as const).map(async (what) => (await conveyor.enqueue(throwsOddThings, { what })).id),
    );
    await waitFor("all dead", async () => (await Promise.all(ids.map(job))).every((j) => j.status === "dead"));
    const errors = (await Promise.all(ids.map(job))).map((j) => j.lastError!);
    expect(errors[0]).toMatchObject({ name: "NonError", message: "plain string" });
    expect(errors[1]).toMatchObject({ name: "NonError", message: "handler threw a non-Error value: undefined" });
    expect(errors[2]).toMatchObject({ name: "NonError", message: "handler threw a non-Error value: null" });
    expect(errors[3]).toMatchObject({ name: "NonError", message: 'handler threw a non-Error value: {"code":42}' });
    expect(errors[4]).toMatchObject({ name: "Error", message: "bad\uFFFDbyte \uFFFD here" });
  });

  it("a result that is not JSON fails the attempt with a clear error", async () => {
    const { id } = await conveyor.enqueue(badResult, {});
    await waitFor("dead", async () => (await job(id)).status === "dead");
    expect((await job(id)).lastError!.message).toMatch(/^result\.big is a BigInt/);
  });
});
