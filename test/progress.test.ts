import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_PROGRESS_BYTES } from "../packages/core/src/core/defaults.js";
import { Conveyor, defineJob, ValidationError, type Worker } from "../packages/core/src/index.js";
import { ProgressReporter } from "../packages/core/src/worker/progress-reporter.js";
import { createTestConveyor, dbOf, storeOf } from "./helpers/database.js";
import { emptyPayload, silent, sql } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

/** A promise a test resolves, to hold a handler at a point it chooses. */
class Gate {
  release!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.release = resolve));
}

/** Per job id: the handler is parked at its gate once `reached` has the id. */
const gates = new Map<string, Gate>();
const reached = new Set<string>();
const gateFor = (id: string) => {
  if (!gates.has(id)) gates.set(id, new Gate());
  return gates.get(id)!;
};
/** What handlers saw, per job id. */
const seen = new Map<string, unknown>();

/**
 * Reports step 1 and waits for it, then steps 2 and 3 without waiting, parks,
 * and returns (the promises of 2 and 3 settle only once they are written).
 */
const stepper = defineJob({
  kind: "stepper",
  schema: emptyPayload,
  async handler({ job, progress }) {
    const first = await progress({ step: 1 });
    const later = [progress({ step: 2 }), progress({ step: 3 })];
    reached.add(job.id);
    await gateFor(job.id).opened;
    seen.set(job.id, { first, later });
  },
});

/** Parks before reporting anything; then reports once and records what it got back. */
const stale = defineJob({
  kind: "stale",
  schema: emptyPayload,
  maxAttempts: 3,
  async handler({ job, progress, signal }) {
    if (job.attempt > 1) return;
    reached.add(job.id);
    await gateFor(job.id).opened;
    const stored = await progress("from the stale owner");
    seen.set(job.id, { stored, aborted: signal.aborted, reason: (signal.reason as Error | undefined)?.name });
  },
});

/** Tries each bad progress value and records the errors. */
const badValues = defineJob({
  kind: "bad-values",
  schema: emptyPayload,
  async handler({ job, progress }) {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const attempts: Array<[string, unknown]> = [
      ["bigint", 10n],
      ["nan", Number.NaN],
      ["circular", circular],
      ["function", () => 1],
      ["too large", "x".repeat(MAX_PROGRESS_BYTES)],
    ];
    const errors: Record<string, { name: string; message: string; code: string }> = {};
    for (const [name, value] of attempts) {
      try {
        await progress(value);
        errors[name] = { name: "none", message: "accepted", code: "" };
      } catch (error) {
        const e = error as Error & { code?: string };
        errors[name] = { name: error instanceof ValidationError ? "ValidationError" : e.name, message: e.message, code: e.code ?? "" };
      }
    }
    seen.set(job.id, errors);
    // At the limit exactly is accepted (the JSON text is the value plus two quotes).
    return { largest: await progress("x".repeat(MAX_PROGRESS_BYTES - 2)) };
  },
});

/** Returns the JSON value it is given, as its result. */
const echo = defineJob({ kind: "echo", schema: z.object({ value: z.unknown() }), handler: ({ payload }) => payload.value });

describe("ctx.progress", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  let worker: Worker | undefined;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [stepper, stale, badValues, echo] as never, logger: silent }));
  });
  afterEach(async () => {
    for (const gate of gates.values()) gate.release();
    await worker?.stop({ graceMs: 0 });
    worker = undefined;
  });
  afterAll(() => cleanup());

  it("stores the first value at once, holds later ones for the interval, and flushes the latest before the attempt ends", async () => {
    // An interval no test run reaches: steps 2 and 3 can only be written by the flush at the end.
    worker = conveyor.worker({ kinds: ["stepper"], progressIntervalMs: 600_000, pollIntervalMs: 50 });
    await worker.start();
    const { id } = await conveyor.enqueue(stepper, {});
    await waitFor("the handler to park", () => reached.has(id));
    const parked = await conveyor.getJob(id);
    expect(parked).toMatchObject({ status: "running", progress: { step: 1 } });
    expect(parked!.progressUpdatedAt).toBeInstanceOf(Date);

    gateFor(id).release();
    const done = await waitFor("the job to succeed", async () => {
      const job = await conveyor.getJob(id);
      return job?.status === "succeeded" ? job : null;
    });
    // The latest value won; both later calls learnt it was stored (3 replaced 2 before it was written).
    expect(done.progress).toEqual({ step: 3 });
    const { first, later } = seen.get(id) as { first: boolean; later: Array<Promise<boolean>> };
    expect(first).toBe(true);
    expect(await Promise.all(later)).toEqual([true, true]);
    expect(done.progressUpdatedAt!.getTime()).toBeGreaterThanOrEqual(parked!.progressUpdatedAt!.getTime());
  });

  it("a stale owner's progress is not written: it gets false and its signal aborts", async () => {
    worker = conveyor.worker({ kinds: ["stale"], concurrency: 1, leaseMs: 600_000, heartbeatMs: 200_000, reclaimIntervalMs: 600_000, pollIntervalMs: 50 });
    await worker.start();
    const { id } = await conveyor.enqueue(stale, {});
    await waitFor("the handler to park", () => reached.has(id));
    // The lease runs out while the handler is parked; the sweep reclaims the
    // job and another worker claims it: it has a new execution id now.
    await sql(conveyor, `UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    expect(await storeOf(conveyor).jobReclaimExpired(10)).toHaveLength(1);
    const [claimed] = await storeOf(conveyor).jobClaim("the-new-owner", 1, ["stale"], null, 600_000);
    expect(claimed!.id).toBe(id);

    gateFor(id).release();
    await waitFor("the stale handler to report", () => seen.has(id));
    expect(seen.get(id)).toEqual({ stored: false, aborted: true, reason: "LeaseLostError" });
    const job = await conveyor.getJob(id);
    expect(job).toMatchObject({ status: "running", lockedBy: "the-new-owner", progress: null, progressUpdatedAt: null });
    // Let the new owner finish, so the job ends as it would.
    await storeOf(conveyor).jobComplete([{ jobId: id, executionId: claimed!.executionId, result: null }]);
  });

  it("refuses a value that is not JSON or is larger than MAX_PROGRESS_BYTES, naming progress", async () => {
    worker = conveyor.worker({ kinds: ["bad-values"], pollIntervalMs: 50, progressIntervalMs: 0 });
    await worker.start();
    const { id } = await conveyor.enqueue(badValues, {});
    const done = await waitFor("the job to succeed", async () => {
      const job = await conveyor.getJob(id);
      return job?.status === "succeeded" ? job : null;
    });
    const errors = seen.get(id) as Record<string, { name: string; message: string; code: string }>;
    for (const name of ["bigint", "nan", "circular", "function", "too large"]) {
      expect(errors[name]!.name, name).toBe("ValidationError");
      expect(errors[name]!.code, name).toBe("VALIDATION");
      expect(errors[name]!.message, name).toMatch(/^progress\b/);
    }
    expect(errors["too large"]!.message).toContain(String(MAX_PROGRESS_BYTES));
    expect(done.result).toEqual({ largest: true });
    expect(done.progress).toBe("x".repeat(MAX_PROGRESS_BYTES - 2));
  });

  it("keeps the handler's return value as the result: object, array, string, null", async () => {
    worker = conveyor.worker({ kinds: ["echo"], pollIntervalMs: 50 });
    await worker.start();
    const values = [{ sent: 3, ids: ["a", "b"] }, [1, "two", { three: 3 }], "done", null];
    const ids = [];
    for (const value of values) ids.push((await conveyor.enqueue(echo, { value })).id);
    for (const [index, id] of ids.entries()) {
      const job = await waitFor(`job ${index} to succeed`, async () => {
        const found = await conveyor.getJob(id);
        return found?.status === "succeeded" ? found : null;
      });
      expect(job.result).toEqual(values[index]);
      expect(job.progress).toBeNull();
    }
  });

  it("keeps at most one write in flight: values reported meanwhile coalesce into one write of the latest", async () => {
    // Every stored progress value is logged by a trigger, so the writes are counted by the database itself.
    await sql(conveyor, `CREATE TABLE {{schema}}.progress_log (progress jsonb)`);
    await sql(
      conveyor,
      `CREATE FUNCTION {{schema}}.log_progress() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN INSERT INTO progress_log VALUES (NEW.progress); RETURN NEW; END $$`,
    );
    await sql(conveyor, `ALTER FUNCTION {{schema}}.log_progress() SET search_path = "${conveyor.options.schema}"`);
    await sql(conveyor, `CREATE TRIGGER log_progress AFTER UPDATE OF progress ON {{schema}}.jobs FOR EACH ROW EXECUTE FUNCTION {{schema}}.log_progress()`);
    const { id } = await conveyor.enqueue(echo, { value: null });
    const [claimed] = await storeOf(conveyor).jobClaim("direct", 1, ["echo"], null, 600_000);
    const reporter = new ProgressReporter(dbOf(conveyor).handlers, id, claimed!.executionId, 0, silent, () => {
      throw new Error("not fenced");
    });

    // Hold the job row, so the first write waits in flight while 99 more values are reported.
    const blocker = await conveyor.pool.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query(`SELECT 1 FROM "${conveyor.options.schema}".jobs WHERE id = $1 FOR UPDATE`, [id]);
      const results = Array.from({ length: 100 }, (_, n) => reporter.report({ n }));
      await waitFor("the first write to wait on the row lock", async () => {
        const { rows } = await conveyor.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%SET progress%'`);
        return rows[0].n === 1;
      });
      await blocker.query("COMMIT");
      expect(await Promise.all(results)).toEqual(Array.from({ length: 100 }, () => true));
    } finally {
      blocker.release();
    }
    const { rows } = await sql(conveyor, `SELECT progress FROM {{schema}}.progress_log`);
    expect(rows.map((row: { progress: unknown }) => row.progress)).toEqual([{ n: 0 }, { n: 99 }]);
    expect((await conveyor.getJob(id))!.progress).toEqual({ n: 99 });
    await reporter.close();
    expect(await reporter.report({ n: 100 })).toBe(false); // after the attempt ended
    await storeOf(conveyor).jobComplete([{ jobId: id, executionId: claimed!.executionId, result: null }]);
  });
});
