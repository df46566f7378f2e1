/**
 * The worker reads which queues are limited, and whether tenants have caps,
 * at most once a second (CLAIM_RESTRICTIONS_REFRESH_MS). Only its first
 * claim waits for that read; later reads go out beside a claim, and the
 * claim after them uses what they found.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_RESTRICTIONS_REFRESH_MS } from "../../src/core/defaults.js";
import { defineJob } from "../../src/index.js";
import { ClaimStore } from "../../src/store/claim-store.js";
import { LimitedClaimStore } from "../../src/store/limited-claim-store.js";
import { QueueSettingsStore } from "../../src/store/queue-settings-store.js";
import { ClaimChooser } from "../../src/worker/claim-chooser.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { emptyPayload, silent } from "./support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, handler: () => {} });

let t: TestConveyor;
let claims: ClaimStore;
beforeAll(async () => {
  t = await createTestConveyor({ jobs: [noop], logger: silent });
  claims = new ClaimStore(t.conveyor.pool, t.schema, null);
});
afterAll(async () => {
  await claims?.close();
  await t?.cleanup();
});

describe("claim restrictions", () => {
  it("are awaited by the first claim only; a stale view is read beside the next claim and used by the one after", async () => {
    const events: string[] = [];
    const settings = new QueueSettingsStore(t.conveyor.pool, t.schema);
    const read = settings.claimRestrictions.bind(settings);
    settings.claimRestrictions = async () => {
      events.push("read sent");
      const restrictions = await read();
      events.push("read done");
      return restrictions;
    };
    const store = {
      jobClaim: (...args: Parameters<ClaimStore["jobClaim"]>) => {
        events.push("claim sent");
        return claims.jobClaim(...args);
      },
    } as ClaimStore;
    const limited = new LimitedClaimStore(t.conveyor.pool, t.schema);
    const chooser = new ClaimChooser(store, limited, settings, "off");
    const request = { workerId: "w", limit: 5, kinds: ["noop"], queues: null, leaseMs: 60_000 };

    await chooser.claim(request);
    expect(events).toEqual(["read sent", "read done", "claim sent"]);

    // A limit set now is not known to the view the worker holds.
    await t.conveyor.enqueue(noop, {}, { queue: "capped" });
    await t.conveyor.setQueueLimits("capped", { concurrency: 1 });
    await new Promise((resolve) => setTimeout(resolve, CLAIM_RESTRICTIONS_REFRESH_MS + 50));
    events.length = 0;
    // Stale: the read goes out, and this claim does not wait for it (the fast claim skips the capped queue anyway).
    expect(await chooser.claim(request)).toEqual([]);
    expect(events.slice(0, 2)).toEqual(["read sent", "claim sent"]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The next claim knows the queue is limited and claims from it through the limited claim.
    const [job] = await chooser.claim(request);
    expect(job?.queue).toBe("capped");
  });
});
