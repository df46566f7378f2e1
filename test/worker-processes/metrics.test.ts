/**
 * A worker process started with --metrics-port serves Prometheus metrics
 * that follow what it did: claims, completions, durations, active jobs.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FAST_LEASE_ARGS, freePort, killAllWorkers, type LedgerSchema, ledgerSchema, spawnWorker } from "./process-helpers.js";
import { waitFor } from "../helpers/wait-for.js";

let current: LedgerSchema | null = null;

afterEach(async () => {
  await killAllWorkers();
  await current?.cleanup();
  current = null;
});

/** The value of one sample line, e.g. `conveyor_active_jobs` or `name{label="x"}`; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("worker process metrics", () => {
  it("serves claimed, completed, duration and active-job metrics on --metrics-port", async () => {
    const t = (current = await ledgerSchema());
    const port = await freePort();
    const worker = spawnWorker({
      databaseUrl: t.databaseUrl,
      schema: t.schema,
      args: [...FAST_LEASE_ARGS, "--concurrency", "5", "--metrics-port", String(port)],
    });
    const announced = await worker.waitForLog("worker metrics at /metrics", 30_000);
    expect(announced.port).toBe(port);
    const scrape = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
      return response.text();
    };

    const labels = `kind="test.ledger",outcome="succeeded"`;
    await t.conveyor.enqueueMany(Array.from({ length: 20 }, (_, i) => ({ job: "test.ledger", payload: { sleepMs: 10 + i } })));
    await waitFor("all 20 jobs to succeed", async () => (await t.db.countStatus("succeeded")) === 20, 30_000);
    // Counters move once the outcome is written, so poll the endpoint too.
    const text = await waitFor(
      "the metrics to count 20 completions",
      async () => {
        const body = await scrape();
        return sample(body, `conveyor_jobs_completed_total{${labels}}`) === 20 && sample(body, "conveyor_active_jobs") === 0 ? body : null;
      },
      10_000,
    );
    for (const name of ["conveyor_jobs_claimed_total", "conveyor_jobs_completed_total", "conveyor_job_duration_seconds", "conveyor_active_jobs"]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(sample(text, `conveyor_jobs_claimed_total{kind="test.ledger",queue="default"}`)).toBe(20);
    expect(sample(text, `conveyor_job_duration_seconds_count{${labels}}`)).toBe(20);
    // Each handler slept at least 10 ms.
    expect(sample(text, `conveyor_job_duration_seconds_sum{${labels}}`)).toBeGreaterThan(20 * 0.01);

    // While jobs run, the gauge shows them.
    await t.conveyor.enqueueMany(Array.from({ length: 3 }, () => ({ job: "test.ledger", payload: { sleepMs: 3_000 } })));
    await waitFor("the active-jobs gauge to show 3", async () => sample(await scrape(), "conveyor_active_jobs") === 3, 10_000);

    worker.signal("SIGTERM");
    expect(await worker.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(await t.db.countStatus("succeeded")).toBe(23);
  }, 60_000);
});
