/**
 * The `cron` option of defineJob: defaults, and every bad input refused with
 * a ConfigError naming the field (and the schedule, for payloads), at
 * definition time, or at worker start for a schema that validates
 * asynchronously.
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, Conveyor, defineJob, defaults } from "../packages/core/src/index.js";
import { createTestConveyor } from "./helpers/database.js";
import { silent } from "./worker/support.js";

const schema = z.object({ to: z.email() });
const define = (cron: unknown, kind = "mail.digest") =>
  defineJob({ kind, schema, queue: "mail", priority: 3, cron: cron as never, handler: async () => {} });

function refused(run: () => unknown, message: RegExp): void {
  let error: unknown;
  try {
    run();
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(ConfigError);
  expect((error as Error).message).toMatch(message);
}

describe("defineJob cron: defaults", () => {
  it("a bare expression: named after the kind, UTC, tenant default, the kind's queue and priority, skip", () => {
    const definition = defineJob({ kind: "cleanup", schema: z.object({}), queue: "ops", priority: -5, cron: "*/5 * * * *", handler: async () => {} });
    expect(definition.schedules).toEqual([
      {
        name: "cleanup",
        kind: "cleanup",
        cron: "*/5 * * * *",
        timezone: defaults.DEFAULT_CRON_TIMEZONE,
        tenant: "default",
        queue: "ops",
        priority: -5,
        payload: {},
        payloadJson: "{}",
        missed: { policy: defaults.DEFAULT_CRON_MISSED_POLICY, limit: defaults.DEFAULT_CRON_CATCH_UP_LIMIT },
      },
    ]);
    expect(defaults.DEFAULT_CRON_TIMEZONE).toBe("UTC");
    expect(defaults.DEFAULT_CRON_MISSED_POLICY).toBe("skip");
  });

  it("a list: entries named <kind>:<index> unless named; the payload stored as the schema parsed it", () => {
    const definition = define([
      { cron: "0 8 * * *", payload: { to: "ada@example.com" } },
      { name: "digest.evening", cron: "0 0 20 * * *", timezone: "Europe/Berlin", payload: { to: "bob@example.com" }, missed: { policy: "catch-up" } },
    ]);
    expect(definition.schedules.map((s) => s.name)).toEqual(["mail.digest:0", "digest.evening"]);
    expect(definition.schedules[1]).toMatchObject({ timezone: "Europe/Berlin", missed: { policy: "catch-up", limit: 10 }, payloadJson: '{"to":"bob@example.com"}' });
    expect(define(undefined).schedules).toEqual([]);
  });
});

describe("defineJob cron: refusals name the field", () => {
  it("a bad expression", () => {
    refused(() => define("every minute"), /^job "mail\.digest": cron: invalid cron expression "every minute"/);
    refused(() => define({ cron: "* * * * * * *", payload: { to: "a@b.co" } }), /^job "mail\.digest": cron\.cron: invalid cron expression/);
    refused(() => define([{ cron: "0 25 * * *", payload: { to: "a@b.co" } }]), /^job "mail\.digest": cron\[0\]\.cron: invalid cron expression/);
    refused(() => define({ payload: { to: "a@b.co" } }), /^job "mail\.digest": cron\.cron must be a cron expression/);
    refused(() => define(42), /^job "mail\.digest": cron must be a cron expression, a schedule/);
  });

  it("an unknown time zone", () => {
    refused(
      () => define([{ cron: "0 8 * * *", payload: { to: "a@b.co" } }, { cron: "0 9 * * *", timezone: "Europe/Atlantis", payload: { to: "a@b.co" } }]),
      /^job "mail\.digest": cron\[1\]\.timezone: unknown time zone "Europe\/Atlantis"/,
    );
  });

  it("a payload its kind's schema refuses (the default {} included), naming the schedule and the path", () => {
    refused(() => define({ name: "digest", cron: "0 8 * * *", payload: { to: "not an address" } }), /^job "mail\.digest": cron \(schedule "digest"\): invalid payload: payload\.to: /);
    refused(() => define("0 8 * * *"), /^job "mail\.digest": cron \(schedule "mail\.digest"\): invalid payload: payload\.to: /);
  });

  it("names, tenants, queues, priorities and the missed policy", () => {
    const ok = { cron: "0 8 * * *", payload: { to: "a@b.co" } };
    refused(() => define({ ...ok, name: "has space" }), /^job "mail\.digest": cron\.name must be 1-128 characters/);
    refused(() => define([{ ...ok, name: "x" }, { ...ok, name: "x" }]), /^job "mail\.digest": cron: schedule name "x" is used twice/);
    refused(() => define({ ...ok, tenant: "" }), /^job "mail\.digest": cron\.tenant must be a non-empty string/);
    refused(() => define({ ...ok, queue: "a queue" }), /^job "mail\.digest": cron\.queue must be/);
    refused(() => define({ ...ok, priority: 5000 }), /^job "mail\.digest": cron\.priority must be an integer from -1000 to 1000/);
    refused(() => define({ ...ok, missed: { policy: "all" } }), /^job "mail\.digest": cron\.missed\.policy must be "skip" or "catch-up", got "all"/);
    refused(() => define({ ...ok, missed: { policy: "catch-up", limit: 0 } }), /^job "mail\.digest": cron\.missed\.limit must be an integer from 1 to 1000, got 0/);
  });

  it("one schedule name used by two kinds", () => {
    const a = define({ name: "shared", cron: "0 8 * * *", payload: { to: "a@b.co" } }, "a");
    const b = define({ name: "shared", cron: "0 9 * * *", payload: { to: "a@b.co" } }, "b");
    refused(
      () => new Conveyor({ connectionString: "postgres://unused@127.0.0.1:1/none", jobs: [a, b], logger: silent }),
      /^jobs: cron schedule name "shared" is used by kinds "a" and "b"/,
    );
  });
});

describe("asynchronous schemas", () => {
  /** A Standard Schema whose validation is async: payload checks wait for worker start. */
  const asyncSchema: StandardSchemaV1<{ n: number }, { n: number }> = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: async (value) =>
        typeof (value as { n?: unknown })?.n === "number" ? { value: value as { n: number } } : { issues: [{ message: "n must be a number", path: ["n"] }] },
    },
  };

  it("a payload refused at worker start, naming the schedule; nothing is written", async () => {
    const job = defineJob({ kind: "async.kind", schema: asyncSchema, cron: { name: "async-schedule", cron: "0 8 * * *", payload: { n: "one" } as never }, handler: async () => {} });
    expect(job.schedules[0]!.payloadJson).toBeNull();
    const test = await createTestConveyor({ jobs: [job], logger: silent });
    try {
      const worker = test.conveyor.worker();
      await expect(worker.start()).rejects.toThrow(ConfigError);
      await expect(test.conveyor.worker().start()).rejects.toThrow(/^job "async\.kind": schedule "async-schedule": invalid payload for job "async\.kind": payload\.n: n must be a number/);
      expect(await test.conveyor.listSchedules()).toEqual([]);
    } finally {
      await test.cleanup();
    }
  });
});
