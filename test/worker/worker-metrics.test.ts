/**
 * A worker's metrics are asked for: `createWorkerMetrics` makes them (it
 * loads prom-client), and a worker records into the set it is given, or
 * into none. The packed core without prom-client is tested in
 * test/package/install-size.test.ts.
 */
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, type Conveyor, createWorkerMetrics, defineJob, type MetricsRegistry } from "../../packages/core/src/index.js";
import { createTestConveyor } from "../helpers/database.js";
import { emptyPayload, silent } from "./support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, handler: () => {} });

describe("worker metrics", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [noop], logger: silent }));
  });
  afterAll(() => cleanup());

  /** Start `worker`, check that it runs one job to success, and stop it. */
  async function runsOneJob(worker: ReturnType<Conveyor["worker"]>): Promise<void> {
    const job = await conveyor.enqueue(noop, {});
    await worker.start();
    try {
      expect((await conveyor.waitFor(job.id)).status).toBe("succeeded");
    } finally {
      await worker.stop();
    }
  }

  it("registers in an app's own prom-client registry and counts there what the worker ran", async () => {
    const registry = new Registry();
    const before = registry.getMetricsAsArray().length;
    const metrics = await createWorkerMetrics({ registry });
    expect(metrics.registry).toBe(registry);
    expect(registry.getMetricsAsArray().length).toBeGreaterThan(before);
    const worker = conveyor.worker({ concurrency: 1, pollIntervalMs: 50, logger: silent, metrics });
    expect(worker.metrics).toBe(metrics);
    await runsOneJob(worker);
    expect(await registry.metrics()).toMatch(/^conveyor_jobs_completed_total\{kind="noop",outcome="succeeded"\} 1$/m);
  });

  it("a worker given no metrics has none and runs its jobs all the same", async () => {
    const worker = conveyor.worker({ concurrency: 1, pollIntervalMs: 50, logger: silent });
    expect(worker.metrics).toBeNull();
    await runsOneJob(worker);
  });

  it("refuses a registry that is not one, and an unknown option, naming the field", async () => {
    await expect(createWorkerMetrics({ registry: {} as MetricsRegistry })).rejects.toThrow(new ConfigError("metrics.registry must be a prom-client Registry"));
    await expect(createWorkerMetrics({ registy: new Registry() } as never)).rejects.toThrow(ConfigError);
    await expect(createWorkerMetrics({ registy: new Registry() } as never)).rejects.toThrow(/^metrics\.registy is not a metrics option \(known: registry\)$/);
  });
});
