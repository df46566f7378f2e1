import { describe, expect, it } from "vitest";
import {
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_RETENTION_BATCH_SIZE,
  DEFAULT_RETENTION_DEAD_LETTER_MS,
  DEFAULT_EVENT_RETENTION_MS,
  DEFAULT_RETENTION_FINISHED_MS,
  DEFAULT_RETENTION_INTERVAL_MS,
} from "../core/defaults.js";
import { resolveWorkerOptions } from "./options.js";

describe("resolveWorkerOptions", () => {
  it("defaults to a 60 s lease renewed every 20 s", () => {
    const options = resolveWorkerOptions({}, ["a"]);
    expect(options.leaseMs).toBe(DEFAULT_LEASE_MS);
    expect(options.heartbeatMs).toBe(DEFAULT_HEARTBEAT_MS);
    expect(Object.isFrozen(options)).toBe(true);
  });

  it("refuses a heartbeat that is not well under the lease", () => {
    expect(() => resolveWorkerOptions({ leaseMs: 30_000, heartbeatMs: 20_000 }, ["a"])).toThrow(
      /heartbeatMs \(20000\) must be at most a third of worker.leaseMs \(30000\)/,
    );
  });

  it("scales the default heartbeat down with a short lease", () => {
    expect(resolveWorkerOptions({ leaseMs: 3_000 }, ["a"]).heartbeatMs).toBe(1_000);
  });

  it("names the field it refuses", () => {
    expect(() => resolveWorkerOptions({ concurrency: 0 }, ["a"])).toThrow(/worker.concurrency/);
    expect(() => resolveWorkerOptions({ kinds: ["b"] }, ["a"])).toThrow(/worker.kinds: "b"/);
    expect(() => resolveWorkerOptions({}, [])).toThrow(/no job kinds/);
    expect(() => resolveWorkerOptions({ queues: [] }, ["a"])).toThrow(/worker.queues is empty/);
  });

  it("prunes by default with the retention defaults, and not at all with retention: false", () => {
    expect(resolveWorkerOptions({}, ["a"]).retention).toEqual({
      finishedMs: DEFAULT_RETENTION_FINISHED_MS,
      deadLetterMs: DEFAULT_RETENTION_DEAD_LETTER_MS,
      eventsMs: DEFAULT_EVENT_RETENTION_MS,
      intervalMs: DEFAULT_RETENTION_INTERVAL_MS,
      batchSize: DEFAULT_RETENTION_BATCH_SIZE,
    });
    expect(resolveWorkerOptions({ retention: { finishedMs: 0, batchSize: 10 } }, ["a"]).retention).toMatchObject({ finishedMs: 0, batchSize: 10 });
    expect(resolveWorkerOptions({ retention: false }, ["a"]).retention).toBeNull();
  });
});
