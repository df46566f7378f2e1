/**
 * `conveyor worker`, `conveyor api` and `conveyor dev` started before their
 * database: each waits, logging one line per try with the error code and
 * the next wait, starts once the database answers, and exits 0 at once on
 * SIGTERM while it waits. "The database" is a port on 127.0.0.1 where
 * nothing listens, until a TCP proxy to the test database opens there.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FaultProxy } from "../chaos/fault-proxy.js";
import { testDatabaseUrl } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { CliProcess, FAST_LEASE_ARGS, freePort, killAllWorkers, LEDGER_JOBS, type LedgerSchema, ledgerSchema, spawnCli, spawnWorker } from "./process-helpers.js";

const WAITING = "waiting for the database";
const target = new URL(testDatabaseUrl());

let current: LedgerSchema | null = null;
const proxies: FaultProxy[] = [];
const directories: string[] = [];

afterEach(async () => {
  await killAllWorkers();
  for (const proxy of proxies.splice(0)) await proxy.stop();
  for (const directory of directories.splice(0)) await rm(directory, { recursive: true, force: true });
  await current?.cleanup();
  current = null;
});

/** A free port and the test database's URL with it: nothing answers there until `open()`. */
async function databaseLater(): Promise<{ url: string; open(): Promise<void> }> {
  const port = await freePort();
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    async open() {
      const proxy = new FaultProxy(target.hostname, Number(target.port || 5432));
      proxies.push(proxy);
      await proxy.start(port);
    },
  };
}

/** The process's "waiting for the database" lines, once there are `count` of them. */
async function waitLines(proc: CliProcess, count: number): Promise<Array<Record<string, unknown>>> {
  return waitFor(`${count} "${WAITING}" lines`, () => {
    const lines = proc.logs().filter((line) => line.msg === WAITING);
    return lines.length >= count ? lines : null;
  });
}

function expectWaitLines(lines: Array<Record<string, unknown>>): void {
  lines.forEach((line, index) => {
    expect(line).toMatchObject({ level: 40, code: "ECONNREFUSED", attempt: index + 1 });
    expect(line.retryInMs).toEqual(expect.any(Number));
  });
  expect(lines[1]!.retryInMs as number).toBeGreaterThan(lines[0]!.retryInMs as number);
}

/** SIGTERM now: the process must exit 0 within a second, having logged why. */
async function expectPromptExit(proc: CliProcess): Promise<void> {
  proc.signal("SIGTERM");
  expect(await proc.waitForExit(1_500)).toEqual({ code: 0, signal: null });
  expect(proc.logs().some((line) => line.msg === "stopped while waiting for the database")).toBe(true);
}

describe("conveyor worker before its database", () => {
  it("waits, logging each try, then starts and runs a job; SIGTERM then stops it with 0", async () => {
    const t = (current = await ledgerSchema());
    const database = await databaseLater();
    const worker = spawnWorker({ databaseUrl: database.url, schema: t.schema, args: FAST_LEASE_ARGS });
    expectWaitLines(await waitLines(worker, 2));
    await database.open();
    await worker.ready();
    const { id } = await t.conveyor.enqueue("test.ledger", {});
    await waitFor("the job ran", async () => (await t.db.job(id)).status === "succeeded");
    worker.signal("SIGTERM");
    expect(await worker.waitForExit(20_000)).toEqual({ code: 0, signal: null });
  }, 60_000);

  it("exits 0 at once on SIGTERM while it waits", async () => {
    const t = (current = await ledgerSchema());
    const database = await databaseLater();
    const worker = spawnWorker({ databaseUrl: database.url, schema: t.schema, args: FAST_LEASE_ARGS });
    await waitLines(worker, 1);
    await expectPromptExit(worker);
    expect(worker.logs().some((line) => line.msg === "worker started")).toBe(false);
  }, 30_000);
});

describe("conveyor api before its database", () => {
  it("waits, then serves; SIGTERM while waiting exits 0 at once", async () => {
    const t = (current = await ledgerSchema());
    const database = await databaseLater();
    const api = spawnCli(["api", "--jobs", LEDGER_JOBS, "--port", "0", "--schema", t.schema], database.url);
    expectWaitLines(await waitLines(api, 2));
    await database.open();
    const listening = await api.waitForLog("API listening");
    expect((await fetch(`${listening.url as string}/readyz`)).status).toBe(200);
    api.signal("SIGTERM");
    expect(await api.waitForExit(10_000)).toEqual({ code: 0, signal: null });

    const waiting = spawnCli(["api", "--jobs", LEDGER_JOBS, "--port", "0", "--schema", t.schema], (await databaseLater()).url);
    await waitLines(waiting, 1);
    await expectPromptExit(waiting);
  }, 60_000);
});

describe("conveyor dev on a DATABASE_URL that is not up yet", () => {
  it("waits, then runs the stack; SIGTERM while waiting exits 0 at once", async () => {
    const t = (current = await ledgerSchema());
    const cwd = await mkdtemp(join(tmpdir(), "conveyor-dev-wait-"));
    directories.push(cwd);
    const database = await databaseLater();
    const args = ["dev", "--port", "0", "--no-demo", "--schema", t.schema];
    const dev = new CliProcess(args, devEnv(database.url), undefined, cwd);
    expectWaitLines(await waitLines(dev, 2));
    await database.open();
    await dev.waitForLog("dev stack running; Ctrl-C to stop");
    dev.signal("SIGTERM");
    expect(await dev.waitForExit(20_000)).toEqual({ code: 0, signal: null });

    const waiting = new CliProcess(args, devEnv((await databaseLater()).url), undefined, cwd);
    await waitLines(waiting, 1);
    await expectPromptExit(waiting);
  }, 60_000);
});

function devEnv(databaseUrl: string): NodeJS.ProcessEnv {
  return { ...process.env, DATABASE_URL: databaseUrl, CONVEYOR_LOG_LEVEL: "info", NODE_OPTIONS: "" };
}
