/**
 * One rule for unknown fields, on every input object of the library: a
 * field the object's type does not define is refused with a typed error
 * naming it (ValidationError with the field as its issue's path for a
 * call's input, ConfigError for options and definitions, StepError inside
 * a handler), before anything is written.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Conveyor, defineJob } from "../packages/core/src/index.js";
import { ConfigError, ConveyorError, StepError, ValidationError } from "../packages/core/src/core/errors.js";
import { runHandler } from "../packages/core/src/testing/index.js";
import { countRows, createTestConveyor, testDatabaseUrl, type TestConveyor } from "./helpers/database.js";
import { item } from "./helpers/jobs.js";
import { silent } from "./worker/support.js";

const stepping = defineJob({
  kind: "unknown-fields.step",
  schema: z.object({}),
  handler: async ({ step }) => step("s", { retries: 0, bogus: 1 } as never, () => 1),
});
const waiting = defineJob({
  kind: "unknown-fields.wait",
  schema: z.object({}),
  handler: async ({ waitForEvent }) => waitForEvent("w", { event: "e", bogus: 1 } as never),
});

let test: TestConveyor;
beforeAll(async () => {
  test = await createTestConveyor({ jobs: [item, stepping, waiting] });
});
afterAll(() => test.cleanup());

const ID = "01890000-0000-7000-8000-000000000000";
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
// Casts: each call passes a field its type does not have, as JavaScript callers (or stale code) can.
const bogus = <T>(value: T): T => ({ ...value, bogus: 1 }) as T;

/** Await a call that must be refused; return its error. */
async function refusal(call: () => unknown): Promise<Error> {
  try {
    await call();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a refusal, but the call succeeded");
}

describe("a call's input with an unknown field is refused with a ValidationError naming it", () => {
  const c = () => test.conveyor;
  const cases: Array<[string, () => unknown, string]> = [
    ["enqueue options", () => c().enqueue(item, { n: 1 }, bogus({})), "bogus"],
    ["enqueue's unique", () => c().enqueue(item, { n: 1 }, { unique: bogus({ key: "k" }) }), "unique.bogus"],
    ["enqueue's traceContext", () => c().enqueue(item, { n: 1 }, { traceContext: bogus({ traceparent: TRACEPARENT }) }), "traceContext.bogus"],
    ["enqueue's dependency", () => c().enqueue(item, { n: 1 }, { dependsOn: [bogus({ jobId: ID })] }), "dependsOn.0.bogus"],
    ["an enqueueMany item", () => c().enqueueMany([bogus({ job: item, payload: { n: 1 } })]), "jobs.0.bogus"],
    ["enqueueMany options", () => c().enqueueMany([{ job: item, payload: { n: 1 } }], bogus({})), "bogus"],
    ["sendEvent", () => c().sendEvent(bogus({ event: "paid" })), "bogus"],
    ["waitFor options", () => c().waitFor(ID, bogus({})), "bogus"],
    ["waitForDatabase options", () => c().waitForDatabase(bogus({})), "bogus"],
    ["a tenant scope", () => c().getJob(ID, bogus({})), "bogus"],
    ["a cancel's scope", () => c().cancel(ID, bogus({ tenant: "acme" })), "bogus"],
    ["a job filter", () => c().listJobs(bogus({})), "bogus"],
    ["prune options", () => c().prune(bogus({})), "bogus"],
    ["a flow", () => c().flows.enqueue(bogus({ jobs: { a: { job: item, payload: { n: 1 } } } })), "bogus"],
    ["a flow's job", () => c().flows.enqueue({ jobs: { a: bogus({ job: item, payload: { n: 1 } }) } }), "jobs.a.bogus"],
    [
      "a flow's dependency",
      () => c().flows.enqueue({ jobs: { a: { job: item, payload: { n: 1 } }, b: { job: item, payload: { n: 2 }, dependsOn: [bogus({ node: "a" })] } } }),
      "jobs.b.dependsOn.0.bogus",
    ],
    [
      "a batch member",
      () => c().flows.enqueueBatch({ jobs: [{ job: item, payload: { n: 1 }, dependsOn: ["x"] } as never], callback: { job: item, payload: { n: 0 } } }),
      "jobs.0.dependsOn",
    ],
    ["a batch callback", () => c().flows.enqueueBatch({ jobs: [{ job: item, payload: { n: 1 } }], callback: bogus({ job: item, payload: { n: 0 } }) }), "callback.bogus"],
    ["a flow list filter", () => c().flows.list(bogus({})), "bogus"],
    ["a dead-letter list filter", () => c().deadLetters.list(bogus({})), "bogus"],
    ["a bulk action", () => c().bulkActions.start(bogus({ action: "cancel" as const, filter: { queue: "mail" } })), "bogus"],
    ["a bulk action list filter", () => c().bulkActions.list(bogus({})), "bogus"],
    ["bulkActions.run options", () => c().bulkActions.run(ID, bogus({})), "bogus"],
    ["key limits", () => c().keyLimits.set("mail", bogus({ concurrency: 1 })), "bogus"],
    ["a key limit's rate", () => c().keyLimits.set("mail", { rateLimit: bogus({ count: 1, intervalMs: 1000 }) }), "rateLimit.bogus"],
    ["key limit options", () => c().keyLimits.set("mail", { concurrency: 1 }, bogus({ key: "k" })), "bogus"],
    ["queue limits' rate", () => c().queues.setLimits("mail", { rateLimit: bogus({ count: 1, intervalMs: 1000 }) }), "rateLimit.bogus"],
    ["tenant limits", () => c().queues.setTenantLimits("acme", bogus({ concurrency: 1 })), "bogus"],
    ["API key options", () => c().apiKeys.create(bogus({ tenant: "acme" })), "bogus"],
    ["a resume's scope", () => c().steps.resume(ID, bogus({})), "bogus"],
  ];

  it.each(cases)("%s", async (_name, call, path) => {
    const error = await refusal(call);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe("VALIDATION");
    // enqueueMany names the item first ("jobs[0]: bogus is not…"); the issue's path is the full one.
    expect(error.message).toContain(`${path.split(".").at(-1)} is not`);
    expect((error as ValidationError).issues[0]?.path).toBe(path);
  });

  it("leaves nothing written", async () => {
    expect(await countRows(test.conveyor, "jobs")).toBe(0);
    expect(await countRows(test.conveyor, "events")).toBe(0);
    expect(await countRows(test.conveyor, "api_keys")).toBe(0);
    expect(await countRows(test.conveyor, "bulk_actions")).toBe(0);
    expect(await countRows(test.conveyor, "key_limits")).toBe(0);
    expect(await countRows(test.conveyor, "queue_settings")).toBe(0);
    expect(await countRows(test.conveyor, "tenant_settings")).toBe(0);
  });
});

describe("options and definitions with an unknown field are refused with a ConfigError naming it", () => {
  const schema = z.object({});
  const handler = async () => {};
  const cases: Array<[string, () => unknown, string]> = [
    ["new Conveyor()", () => new Conveyor(bogus({ connectionString: testDatabaseUrl() })), "bogus"],
    ["tracing", () => new Conveyor({ connectionString: testDatabaseUrl(), tracing: bogus({}) }), "tracing.bogus"],
    ["defineJob", () => defineJob(bogus({ kind: "k", schema, handler })), 'job "k": bogus'],
    ["backoff", () => defineJob({ kind: "k", schema, handler, backoff: bogus({}) }), 'job "k": backoff.bogus'],
    ["batch", () => defineJob({ kind: "k", schema, batch: bogus({ maxSize: 2 }), batchHandler: async () => [] }), 'job "k": batch.bogus'],
    ["a cron schedule", () => defineJob({ kind: "k", schema, handler, cron: bogus({ cron: "0 * * * *" }) }), 'job "k": cron.bogus'],
    ["missed", () => defineJob({ kind: "k", schema, handler, cron: { cron: "0 * * * *", missed: bogus({ policy: "skip" as const }) } }), 'job "k": cron.missed.bogus'],
    ["a kind's retention", () => defineJob({ kind: "k", schema, handler, retention: bogus({}) }), 'job "k": retention.bogus'],
    ["worker options", () => test.conveyor.worker(bogus({})), "worker.bogus"],
    ["a worker's retention", () => test.conveyor.worker({ retention: bogus({}) }), "worker.retention.bogus"],
    ["runHandler options", () => runHandler(item, { n: 1 }, bogus({})), "bogus"],
  ];

  it.each(cases)("%s", async (_name, call, path) => {
    const error = await refusal(call);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toBeInstanceOf(ConveyorError);
    expect(error.message).toContain(`${path} is not`);
  });
});

describe("a handler's step or wait options with an unknown field", () => {
  it.each([
    [stepping, 'step "s": bogus is not a step option'],
    [waiting, 'waitForEvent "w": bogus is not a waitForEvent option'],
  ])("fail the attempt with a StepError naming it, in runHandler (%#)", async (definition, message) => {
    const result = await runHandler(definition, {});
    expect(result.error).toBeInstanceOf(StepError);
    expect((result.error as Error).message).toContain(message);
  });

  it("fail the attempt with a StepError naming it, in a worker", async () => {
    const job = await test.conveyor.enqueue(stepping, {}, { queue: "unknown-fields" });
    const worker = test.conveyor.worker({ queues: ["unknown-fields"], logger: silent });
    await worker.start();
    try {
      const ended = await test.conveyor.waitFor(job.id, { timeoutMs: 30_000 });
      expect(ended.status).toBe("dead");
      expect(ended.executions[0]?.error?.message).toContain('step "s": bogus is not a step option');
    } finally {
      await worker.stop();
    }
  });
});
