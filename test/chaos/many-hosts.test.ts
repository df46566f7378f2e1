/**
 * Scenario: worker processes on three hosts, each a network namespace this
 * test creates, reaching PostgreSQL over a veth link of its own. First the
 * throughput with 1, 2 and 3 hosts; then 100,000 jobs on the three while one
 * host's link is cut for twice the lease and restored. Nothing is lost,
 * nothing succeeds twice, the cut host's jobs are reclaimed by the others,
 * and its stale writes are fenced once its link is back.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import { ChaosRun, type ChaosDatabase, createChaosDatabase, deadlocks, sleep, summary } from "./harness.js";
import { DedicatedPostgres } from "./dedicated-postgres.js";
import { waitFor } from "../helpers/wait-for.js";

const HOSTS = 3;
const JOBS = 100_000;
const THROUGHPUT_JOBS = 10_000;
const LEASE_MS = 3_000;
const CUT_MS = 2 * LEASE_MS + 1_000;
const DRAIN_BOUND_MS = 240_000;
const ARGS = ["--concurrency", "50", "--claim-batch-size", "50", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "500", "--poll-interval-ms", "200"];

const tag = randomBytes(2).toString("hex");
const hosts = Array.from({ length: HOSTS }, (_, i) => ({
  netns: `cv${tag}h${i + 1}`,
  link: `cv${tag}v${i + 1}`,
  serverAddress: `10.77.${i + 1}.1`,
  hostAddress: `10.77.${i + 1}.2`,
}));

function ip(...args: string[]): void {
  execFileSync("ip", args, { stdio: "ignore" });
}

/** Each host: a namespace, and a veth pair whose far end is its eth0, on a /24 of its own. */
function createHosts(): void {
  for (const host of hosts) {
    ip("netns", "add", host.netns);
    ip("link", "add", host.link, "type", "veth", "peer", "name", "eth0", "netns", host.netns);
    ip("addr", "add", `${host.serverAddress}/24`, "dev", host.link);
    ip("link", "set", host.link, "up");
    ip("netns", "exec", host.netns, "ip", "addr", "add", `${host.hostAddress}/24`, "dev", "eth0");
    ip("netns", "exec", host.netns, "ip", "link", "set", "eth0", "up");
    ip("netns", "exec", host.netns, "ip", "link", "set", "lo", "up");
  }
}

function removeHosts(): void {
  for (const host of hosts) {
    try {
      ip("netns", "del", host.netns); // takes its end of the veth pair, and so the pair
    } catch {
      // not created
    }
    try {
      ip("link", "del", host.link);
    } catch {
      // gone with the namespace
    }
  }
}

let server: DedicatedPostgres | null = null;
let database: ChaosDatabase | null = null;
const runs: ChaosRun[] = [];

beforeAll(async () => {
  removeHosts();
  createHosts();
  server = await new DedicatedPostgres({
    listenAddresses: ["127.0.0.1", ...hosts.map((host) => host.serverAddress)].join(","),
    allowFrom: hosts.map((host) => `${host.hostAddress}/32`),
  }).start();
  database = await createChaosDatabase(server.url);
}, 120_000);

afterAll(async () => {
  for (const run of runs) await run.cleanup();
  await database?.drop().catch(() => {});
  await server?.cleanup();
  removeHosts();
}, 60_000);

/** The database's URL as a host sees it: over its own link. */
function urlFrom(host: (typeof hosts)[number]): string {
  const url = new URL(database!.url);
  url.hostname = host.serverAddress;
  return url.toString();
}

describe("chaos: worker hosts in network namespaces", () => {
  it("measures throughput on 1, 2 and 3 hosts", async () => {
    const rates: string[] = [];
    for (let count = 1; count <= HOSTS; count++) {
      const r = await new ChaosRun(`hosts-${count}`, database!.url).setup();
      runs.push(r);
      const workers = hosts.slice(0, count).map((host) => r.spawn(ARGS, { databaseUrl: urlFrom(host), netns: host.netns }));
      await Promise.all(workers.map((w) => w.ready()));
      await r.enqueue(Array.from({ length: THROUGHPUT_JOBS }, () => ({ job: "chaos.work" as const, payload: {} })));
      const startedAt = Date.now();
      await r.drained(120_000, startedAt);
      const seconds = (Date.now() - startedAt) / 1000;
      rates.push(`${count} host${count > 1 ? "s" : ""}: ${Math.round(THROUGHPUT_JOBS / seconds)} jobs/s`);
      await r.stopWorkers();
      expect((await r.statusCounts()).succeeded).toBe(THROUGHPUT_JOBS);
    }
    console.log(`[chaos] many-hosts throughput (${THROUGHPUT_JOBS} jobs, ledger write per job): ${rates.join(", ")}`);
  }, 400_000);

  it(`finishes ${JOBS} jobs on ${HOSTS} hosts while one host's link is cut past the lease`, async () => {
    const r = await new ChaosRun("many-hosts", database!.url).setup();
    runs.push(r);
    const deadlocksBefore = await deadlocks(database!.url);
    const workers: CliProcess[] = hosts.map((host) => r.spawn(ARGS, { databaseUrl: urlFrom(host), netns: host.netns }));
    await Promise.all(workers.map((w) => w.ready()));
    await r.enqueue(Array.from({ length: JOBS }, (_, i) => ({ job: "chaos.work" as const, payload: { sleepMs: i % 3 } })));
    const enqueuedAt = Date.now();
    r.startLeaseMonitor();
    await waitFor("a fifth of the jobs to succeed", async () => ((await r.statusCounts()).succeeded ?? 0) >= JOBS / 5, 120_000, 100);
    const cut = hosts[1]!;
    ip("link", "set", cut.link, "down");
    const cutAt = Date.now();
    await sleep(CUT_MS);
    ip("link", "set", cut.link, "up");
    const cutFor = Date.now() - cutAt;
    expect((await r.statusCounts()).succeeded ?? 0).toBeLessThan(JOBS);

    const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt, () => workers);
    const maxOverdueMs = await r.stopLeaseMonitor();
    await r.stopWorkers();
    const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner"] });
    summary("many-hosts", verdict, `host 2's link cut for ${(cutFor / 1000).toFixed(1)} s (lease ${LEASE_MS / 1000} s)`, drainSeconds, `longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`);
    expect(verdict.violations).toEqual([]);
    expect(r.logProblems()).toEqual([]);
    expect(verdict.statuses).toEqual({ succeeded: JOBS });
    // The cut host's attempts expired and were run again elsewhere.
    expect(verdict.outcomes.lease_expired ?? 0).toBeGreaterThan(0);
    expect(maxOverdueMs).toBeLessThan(10_000);
    expect(await deadlocks(database!.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
  }, 400_000);
});
