/**
 * Payloads written beside their definition are type-checked wherever they
 * are written: `enqueueMany` items, batch members and callbacks, and flow
 * jobs given as plain objects, as `enqueue` and `flowJob(...)` check them.
 * The checks are the compiler's (`npx tsc -p test/tsconfig.json`): each
 * `@ts-expect-error` must meet an error, or the compile fails. A kind given
 * by name, or an item typed as the wide `EnqueueManyItem`, stays unchecked
 * until its schema runs.
 */
import { describe, expectTypeOf, it } from "vitest";
import { z } from "zod";
import type { ConveyorClient } from "../packages/core/src/client/conveyor-client.js";
import { flowJob } from "../packages/core/src/client/enqueue-flow.js";
import type { EnqueueManyItem } from "../packages/core/src/client/job-enqueuer.js";
import { defineJob } from "../packages/core/src/core/define-job.js";
import type { FlowJob, PayloadFor } from "../packages/core/src/index.js";

const sendEmail = defineJob({ kind: "email.send", schema: z.object({ to: z.email() }), handler: async () => {} });
const resize = defineJob({ kind: "image.resize", schema: z.object({ width: z.number().int() }), handler: async () => {} });
const report = defineJob({ kind: "report", schema: z.object({ day: z.string() }), handler: async () => {} });

/** Never called: what it says is checked by the compiler. */
async function typeChecks(conveyor: ConveyorClient): Promise<void> {
  await conveyor.enqueueMany([
    { job: sendEmail, payload: { to: "a@example.com" } },
    { job: resize, payload: { width: 640 } },
    { job: "email.send", payload: { anything: true } }, // by name: the schema checks it when enqueued
  ]);
  // @ts-expect-error `width` must be a number
  await conveyor.enqueueMany([{ job: resize, payload: { width: "640" } }]);
  // @ts-expect-error each item is checked against its own definition: sendEmail has no `width`
  await conveyor.enqueueMany([{ job: resize, payload: { width: 1 } }, { job: sendEmail, payload: { width: 1 } }]);
  const built = ["a@example.com", "b@example.com"].map((to) => ({ job: sendEmail, payload: { to } }));
  await conveyor.enqueueMany(built);
  // @ts-expect-error an array built elsewhere is checked too: `to` is required
  await conveyor.enqueueMany([{ job: sendEmail, payload: {} }].map((item) => item));
  const wide: EnqueueManyItem[] = [{ job: sendEmail, payload: JSON.parse("{}") }];
  await conveyor.enqueueMany(wide);

  await conveyor.flows.enqueueBatch({
    jobs: [
      { job: resize, payload: { width: 1 } },
      { job: resize, payload: { width: 2 }, priority: 3 },
    ],
    callback: { job: report, payload: { day: "2026-01-01" }, when: "always" },
  });
  await conveyor.flows.enqueueBatch({
    // @ts-expect-error a member's payload is checked against its definition
    jobs: [{ job: resize, payload: { width: "wide" } }],
    callback: { job: report, payload: { day: "2026-01-01" } },
  });
  await conveyor.flows.enqueueBatch({
    jobs: [{ job: resize, payload: { width: 1 } }],
    // @ts-expect-error the callback's payload is checked against its definition
    callback: { job: report, payload: { day: 1 } },
  });

  await conveyor.flows.enqueue({
    jobs: {
      charge: { job: resize, payload: { width: 1 } },
      mail: { job: sendEmail, payload: { to: "a@example.com" }, dependsOn: ["charge"] },
      typed: flowJob(report, { day: "2026-01-01" }, { dependsOn: ["mail"] }),
      named: { job: "report", payload: { whatever: 1 } },
    },
  });
  await conveyor.flows.enqueue({
    jobs: {
      // @ts-expect-error a plain-object node's payload is checked against its definition
      mail: { job: sendEmail, payload: { to: 42 } },
    },
  });
  await conveyor.flows.enqueue({
    jobs: {
      charge: { job: resize, payload: { width: 1 } },
      // @ts-expect-error each node by its own definition: report has no `width`
      report: { job: report, payload: { width: 1 }, dependsOn: ["charge"] },
    },
  });
}

describe("payload types of batches, flows and enqueueMany", () => {
  it("follow the definition given beside them", () => {
    expectTypeOf<PayloadFor<typeof sendEmail>>().toEqualTypeOf<{ to: string }>();
    expectTypeOf<PayloadFor<string>>().toBeUnknown();
    expectTypeOf<FlowJob<typeof resize>["payload"]>().toEqualTypeOf<{ width: number }>();
    expectTypeOf<EnqueueManyItem["payload"]>().toBeUnknown();
    expectTypeOf(typeChecks).toBeFunction();
  });
});
