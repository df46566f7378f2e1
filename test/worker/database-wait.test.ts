/**
 * A worker started while its database cannot be reached waits: each failed
 * try is reported (test signal and log) with its error code and the next
 * wait, which grows; it starts once the database answers, and `stop()`
 * during the wait ends it at once. "The database" is a port on 127.0.0.1
 * where nothing listens, until a TCP proxy to the test database opens there.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Conveyor, defineJob } from "../../packages/core/src/index.js";
import { DATABASE_WAIT_MAX_MS, DATABASE_WAIT_MIN_MS } from "../../packages/core/src/core/defaults.js";
import { workerTestSignals } from "../../packages/core/src/worker/test-signals.js";
import { findFreePort } from "../../packages/embedded/src/free-port.js";
import { FaultProxy } from "../chaos/fault-proxy.js";
import { createTestConveyor, testDatabaseUrl } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { emptyPayload, silent } from "./support.js";

const quick = defineJob({ kind: "database-wait", schema: emptyPayload, handler: () => "ran" });

describe("a worker started while the database is down", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  const target = new URL(testDatabaseUrl());
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [quick], logger: silent }));
  });
  afterAll(() => cleanup());

  /** A client of the same schema whose database is 127.0.0.1:`port`. */
  async function clientAt(port: number) {
    const url = new URL(target);
    url.hostname = "127.0.0.1";
    url.port = String(port);
    return createTestConveyor({ jobs: [quick], logger: silent, connectionString: url.toString(), schema: conveyor.options.schema }, { migrate: false });
  }

  it("waits with growing back-off, then starts and runs a job once the database answers", async () => {
    const port = await findFreePort();
    const down = await clientAt(port);
    const proxy = new FaultProxy(target.hostname, Number(target.port || 5432));
    const worker = down.conveyor.worker({ pollIntervalMs: 100, logger: silent });
    const signals = workerTestSignals(worker).worker;
    try {
      const starting = worker.start();
      const first = await signals.databaseWait.wait();
      const second = await signals.databaseWait.wait();
      expect(first).toMatchObject({ attempt: 1, code: "ECONNREFUSED" });
      expect(second).toMatchObject({ attempt: 2, code: "ECONNREFUSED" });
      expect(first.retryInMs).toBeGreaterThanOrEqual(DATABASE_WAIT_MIN_MS * 0.8);
      expect(first.retryInMs).toBeLessThanOrEqual(DATABASE_WAIT_MIN_MS);
      expect(second.retryInMs).toBeGreaterThan(DATABASE_WAIT_MIN_MS);
      expect(second.retryInMs).toBeLessThanOrEqual(Math.min(2 * DATABASE_WAIT_MIN_MS, DATABASE_WAIT_MAX_MS));
      expect(worker.activeCount).toBe(0);

      await proxy.start(port);
      await starting;
      const { id } = await conveyor.enqueue(quick, {});
      await waitFor("the job ran", async () => (await conveyor.getJob(id))!.status === "succeeded");
    } finally {
      await worker.stop();
      await down.cleanup();
      await proxy.stop();
    }
  });

  it("stop() during the wait ends it at once; start() resolves with the worker stopped", async () => {
    const down = await clientAt(await findFreePort());
    const worker = down.conveyor.worker({ logger: silent });
    const signals = workerTestSignals(worker).worker;
    try {
      const starting = worker.start();
      await signals.databaseWait.wait();
      const before = performance.now();
      await worker.stop();
      await starting;
      expect(performance.now() - before).toBeLessThan(1_000);
      // Nothing more is tried once stopped: no further wait is reported, and no claim loop ever ran.
      await expect(signals.claimRound.wait(0)).rejects.toThrow(/no test signal/);
    } finally {
      await down.cleanup();
    }
  });

  it("a refusal that waiting cannot mend (no such database) is thrown at once", async () => {
    const url = new URL(target);
    url.pathname = "/conveyor_no_such_database";
    const { conveyor: wrong, cleanup: close } = await createTestConveyor(
      { jobs: [quick], logger: silent, connectionString: url.toString(), schema: conveyor.options.schema },
      { migrate: false },
    );
    try {
      await expect(wrong.worker({ logger: silent }).start()).rejects.toThrow(/does not exist/);
    } finally {
      await close();
    }
  });
});
