import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveBackoff } from "../packages/core/src/core/backoff.js";
import { MAX_DELAY_MS, MAX_RUN_AT_MS, MIN_RUN_AT_MS } from "../packages/core/src/core/defaults.js";
import { ConfigError, RetryAfter, ValidationError } from "../packages/core/src/core/errors.js";
import { countRows, createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { allTestJobs, anyValue, item, sendEmail } from "./helpers/jobs.js";

// Every case must be refused with a typed error before anything is written,
// so the jobs table of this file's schema stays empty throughout.
let test: TestConveyor;
beforeAll(async () => {
  test = await createTestConveyor({ jobs: allTestJobs });
});
afterAll(async () => {
  expect(await countRows(test.conveyor, "jobs")).toBe(0);
  await test.cleanup();
});

/** Run a failing enqueue; return its ValidationError and check nothing was inserted. */
async function refused(attempt: () => Promise<unknown>): Promise<ValidationError> {
  const error = await attempt().then(
    () => new Error("expected a ValidationError, but the enqueue succeeded"),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationError);
  expect((error as ValidationError).code).toBe("VALIDATION");
  expect(await countRows(test.conveyor, "jobs")).toBe(0);
  return error as ValidationError;
}

describe("payload that fails its schema", () => {
  it("names the path and the rule, in the message and the issues", async () => {
    const error = await refused(() => test.conveyor.enqueue(sendEmail, { to: "not-an-email", subject: "hi" }));
    expect(error.message).toContain("payload.to");
    expect(error.message).toMatch(/email/i);
    expect(error.issues).toEqual([{ path: "payload.to", message: expect.stringMatching(/email/i) }]);
  });

  it("reports every failing field", async () => {
    const error = await refused(() => test.conveyor.enqueue("email.send", { to: 1, subject: 2 }));
    expect(error.issues.map((issue) => issue.path).sort()).toEqual(["payload.subject", "payload.to"]);
  });
});

describe("options", () => {
  it("refuses an unknown kind", async () => {
    const error = await refused(() => test.conveyor.enqueue("no.such.kind", {}));
    expect(error.message).toContain("no.such.kind");
    expect(error.issues[0]?.path).toBe("kind");
  });

  it("refuses a negative delayMs", async () => {
    const error = await refused(() => test.conveyor.enqueue(item, { n: 1 }, { delayMs: -1 }));
    expect(error.issues[0]?.path).toBe("delayMs");
  });

  // 8.7e15 ms from now is past what a JavaScript Date holds; 1e17 past what a
  // PostgreSQL interval holds; MAX_DELAY_MS + 1 is just past the bound.
  it.each([MAX_DELAY_MS + 1, 8.7e15, 9007199254740992, 1e17, Number.POSITIVE_INFINITY])("refuses delayMs %s naming the field", async (delayMs) => {
    const error = await refused(() => test.conveyor.enqueue(item, { n: 1 }, { delayMs }));
    expect(error.issues).toEqual([{ path: "delayMs", message: expect.stringContaining(String(MAX_DELAY_MS)) }]);
  });

  it("refuses the same delay inside a batch, naming the item", async () => {
    const error = await refused(() => test.conveyor.enqueueMany([{ job: item, payload: { n: 1 } }, { job: item, payload: { n: 2 }, delayMs: 1e17 }]));
    expect(error.issues[0]?.path).toBe("jobs.1.delayMs");
  });

  it.each([
    ["seconds passed as milliseconds", new Date(1_700_000_000)],
    ["just before 2000", new Date(MIN_RUN_AT_MS - 1)],
    ["the year 10000", new Date(MAX_RUN_AT_MS)],
    ["the last time a Date holds", new Date(8.64e15)],
    ["an invalid Date", new Date(Number.NaN)],
  ])("refuses runAt at %s", async (_label, runAt) => {
    const error = await refused(() => test.conveyor.enqueue(item, { n: 1 }, { runAt }));
    expect(error.issues[0]?.path).toBe("runAt");
  });

  it("bounds RetryAfter and the backoff cap by the same delay", () => {
    expect(new RetryAfter(MAX_DELAY_MS).delayMs).toBe(MAX_DELAY_MS);
    expect(() => new RetryAfter(MAX_DELAY_MS + 1)).toThrow(ValidationError);
    expect(() => new RetryAfter(1e17)).toThrow(/delayMs must be a number from 0 to/);
    expect(resolveBackoff({ capMs: MAX_DELAY_MS }).capMs).toBe(MAX_DELAY_MS);
    expect(() => resolveBackoff({ capMs: MAX_DELAY_MS + 1 })).toThrow(ConfigError);
  });

  it("refuses runAt and delayMs together", async () => {
    const error = await refused(() => test.conveyor.enqueue(item, { n: 1 }, { runAt: new Date(), delayMs: 10 }));
    expect(error.message).toMatch(/runAt.*delayMs/);
  });

  it.each([1.5, 1001, -1001, Number.NaN])("refuses priority %s", async (priority) => {
    const error = await refused(() => test.conveyor.enqueue(item, { n: 1 }, { priority }));
    expect(error.issues[0]?.path).toBe("priority");
  });
});

describe("payload that JSON cannot hold", () => {
  const circular: Record<string, unknown> = { name: "loop" };
  circular.self = circular;

  it.each([
    ["a BigInt", 10n, /BigInt/],
    ["NaN", Number.NaN, /NaN/],
    ["Infinity", Number.POSITIVE_INFINITY, /Infinity/],
    ["a circular object", circular, /circular/],
    ["a function", () => 1, /function/],
    ["a string with a NUL byte", "a\u0000b", /NUL/],
    ["a lone surrogate", "broken \uD800 text", /surrogate/],
    ["an object key with a NUL byte", { "k\u0000": 1 }, /NUL/],
  ])("refuses %s", async (_label, value, rule) => {
    const error = await refused(() => test.conveyor.enqueue(anyValue, { value }));
    expect(error.message).toMatch(rule);
    expect(error.issues[0]?.path).toMatch(/^payload\.value/);
  });

  it("refuses the whole batch when one item holds a lone surrogate", async () => {
    const error = await refused(() =>
      test.conveyor.enqueueMany([
        { job: anyValue, payload: { value: "fine" } },
        { job: anyValue, payload: { value: "\uDC00" } },
      ]),
    );
    expect(error.issues[0]?.path).toBe("jobs.1.payload.value");
  });
});
