/**
 * Limits per key across real worker processes: 4 `conveyor worker`
 * processes compete for jobs of 50 keys; the key limits are judged from the
 * stored executions (overlapping [started, ended) intervals per key, and
 * starts per window), not from anything the workers report. A worker killed
 * with SIGKILL while it holds a key's slots releases them at reclaim.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  FAST_LEASE_ARGS,
  killAllWorkers,
  type LedgerSchema,
  ledgerSchema,
  spawnWorker,
  workerIdOf,
} from "./process-helpers.js";
import { KEYED_EXECUTIONS_SQL, type KeyedExecution, keyedExecutions, maxOverlapByKey, maxStartsPerWindow } from "../helpers/key-executions.js";
import { waitFor } from "../helpers/wait-for.js";

let current: LedgerSchema | null = null;

afterEach(async () => {
  await killAllWorkers();
  await current?.cleanup();
  current = null;
});

async function executionsOf(t: LedgerSchema, queue: string): Promise<KeyedExecution[]> {
  return keyedExecutions(await t.db.query(KEYED_EXECUTIONS_SQL.replaceAll("{{schema}}", `"${t.schema}"`), [queue]));
}

function groupByKey(executions: readonly KeyedExecution[]): Map<string, KeyedExecution[]> {
  const groups = new Map<string, KeyedExecution[]>();
  for (const e of executions) groups.set(e.key, [...(groups.get(e.key) ?? []), e]);
  return groups;
}

describe("limits per key across 4 worker processes", () => {
  it("never runs more of a key than its limit, and keeps each key's rate within its window", async () => {
    const t = (current = await ledgerSchema());
    await t.conveyor.keyLimits.set("keyed", { concurrency: 2 });
    for (let k = 0; k < 5; k++) await t.conveyor.keyLimits.set("keyed", { concurrency: 1 }, { key: `key-${k}` });
    await t.conveyor.keyLimits.set("rated", { rateLimit: { count: 2, intervalMs: 400 } });
    await t.conveyor.enqueueMany([
      ...Array.from({ length: 400 }, (_, i) => ({ job: "test.ledger", payload: { sleepMs: 30 + (i % 5) * 10 }, queue: "keyed", limitKey: `key-${i % 50}` })),
      ...Array.from({ length: 60 }, (_, i) => ({ job: "test.ledger", payload: { sleepMs: 5 }, queue: "rated", limitKey: `rate-${i % 6}` })),
    ]);
    const workers = Array.from({ length: 4 }, () =>
      spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, "--concurrency", "8"] }),
    );
    await Promise.all(workers.map((worker) => worker.ready()));
    await waitFor("every job to succeed", async () => (await t.db.countStatus("succeeded")) === 460, 90_000, 200);

    const keyed = await executionsOf(t, "keyed");
    expect(keyed).toHaveLength(400);
    const overlap = maxOverlapByKey(keyed);
    expect(overlap.size).toBe(50);
    for (const [key, max] of overlap) expect(max, key).toBeLessThanOrEqual(key.match(/^key-[0-4]$/) ? 1 : 2);
    // The limits were reached: 32 slots over 50 keys ran keys at their limit at once
    // (how many depends on the timing of the four processes; 10 to 30 here).
    expect([...overlap.values()].filter((max) => max === 2).length).toBeGreaterThanOrEqual(3);
    // Every process took part.
    const pids = await t.db.query<{ pid: number }>(`SELECT DISTINCT pid FROM "${t.schema}".ledger WHERE event = 'done'`);
    expect(pids.length).toBe(4);

    const rated = await executionsOf(t, "rated");
    expect(rated).toHaveLength(60);
    for (const [key, { max }] of maxStartsPerWindow(rated, 400)) expect(max, key).toBeLessThanOrEqual(2);
    // Ten jobs of a key at 2 per 400 ms take at least four windows after the first.
    for (const [key, list] of groupByKey(rated)) {
      expect(list.at(-1)!.start - list[0]!.start, key).toBeGreaterThanOrEqual(4 * 400 * 1000);
    }
    // Nothing stays counted once the jobs have ended.
    const status = await t.conveyor.keyLimits.status("keyed", "key-7");
    expect(status).toMatchObject({ running: 0, ready: 0, state: "idle" });
  }, 120_000);

  it("releases the slots of a key held by a worker killed with SIGKILL at reclaim", async () => {
    const t = (current = await ledgerSchema());
    await t.conveyor.keyLimits.set("keyed", { concurrency: 2 });
    const victim = spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, "--concurrency", "4"] });
    await victim.ready();
    // The victim takes both slots of the key with runs that would last a minute.
    const held = await t.conveyor.enqueueMany(
      Array.from({ length: 2 }, () => ({ job: "test.ledger", payload: { trackStart: true, firstRunSleepMs: 60_000, sleepMs: 50 }, queue: "keyed", limitKey: "acct" })),
    );
    await waitFor("the victim to hold both slots", async () => (await t.db.ledger({ pid: victim.pid, event: "start" })).length === 2, 20_000);
    const behind = await t.conveyor.enqueueMany(
      Array.from({ length: 4 }, () => ({ job: "test.ledger", payload: { trackStart: true, sleepMs: 50 }, queue: "keyed", limitKey: "acct" })),
    );
    const survivor = spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, "--concurrency", "4"] });
    await survivor.ready();
    // The survivor has free slots, but the key has none (judged below from the stored attempts).
    expect((await t.conveyor.keyLimits.status("keyed", "acct")).state).toBe("concurrency_limit");

    victim.signal("SIGKILL");
    await victim.waitForExit(10_000);
    await waitFor("every job to succeed", async () => (await t.db.countStatus("succeeded")) === 6, 30_000, 100);
    const reclaimedAt: number[] = [];
    for (const { id } of held) {
      const executions = await t.db.executions(id);
      expect(executions.map((e) => e.outcome)).toEqual(["lease_expired", "succeeded"]);
      reclaimedAt.push(executions[0]!.finished_at!.getTime());
    }
    // The survivor claimed every 100 ms from its start until the victim's leases (2 s, renewed every
    // 500 ms) ran out after the kill and were reclaimed: it started nothing of the key before then.
    const survivorStarts = (await Promise.all([...held, ...behind].map(({ id }) => t.db.executions(id))))
      .flat()
      .filter((e) => workerIdOf(survivor.pid).test(e.worker_id))
      .map((e) => e.started_at.getTime());
    expect(survivorStarts).toHaveLength(6);
    expect(Math.min(...survivorStarts)).toBeGreaterThanOrEqual(Math.min(...reclaimedAt));
    const overlap = maxOverlapByKey(await executionsOf(t, "keyed"));
    expect(overlap.get("acct")).toBe(2);
    expect(behind).toHaveLength(4);
    expect(await t.conveyor.keyLimits.status("keyed", "acct")).toMatchObject({ running: 0, state: "idle" });
  }, 60_000);
});
