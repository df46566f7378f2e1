import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmbeddedPostgresError } from "../packages/core/src/core/errors.js";
import { startEmbeddedPostgres } from "../packages/embedded/src/embedded-postgres.js";
import { JsonLinesProcess, REPO_ROOT, requireBuild } from "./helpers/child-process.js";
import { processGone, waitForProcessGone } from "./helpers/processes.js";

const CHILD = join(REPO_ROOT, "test", "helpers", "embedded-child.mjs");
const isRoot = process.getuid?.() === 0;

interface ChildReport {
  ok: boolean;
  owned?: boolean;
  port?: number;
  connectionString?: string;
  message?: string;
  pid: number;
}

const tempDirs: string[] = [];
/** A fresh directory PostgreSQL can reach: as root it runs as the `postgres` user, so it must be searchable by others. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-embedded-"));
  chmodSync(dir, 0o755);
  tempDirs.push(dir);
  return dir;
}

const children: JsonLinesProcess[] = [];
function child(mode: "hold" | "graceful" | "once" | "exit", dataDir: string): JsonLinesProcess {
  const process = new JsonLinesProcess(CHILD, [mode, dataDir]);
  children.push(process);
  return process;
}

beforeAll(() => {
  requireBuild("src/embedded-postgres.js", "embedded");
});
afterAll(async () => {
  for (const process of children) process.child.kill("SIGKILL");
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function postmasterPid(dataDir: string): number {
  return Number.parseInt(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]!, 10);
}

async function answers(connectionString: string): Promise<boolean> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 3_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

describe("embedded PostgreSQL across processes", () => {
  it("is shared with a second process, and stops when its owner gets SIGTERM", async () => {
    const dataDir = join(tempDir(), "pg");
    const owner = child("hold", dataDir);
    const started = await owner.next<ChildReport>(60_000);
    expect(started, started.message).toMatchObject({ ok: true, owned: true });
    const serverPid = postmasterPid(dataDir);

    const second = child("once", dataDir);
    const joined = await second.next<ChildReport>();
    expect(joined).toMatchObject({ ok: true, owned: false, port: started.port, connectionString: started.connectionString });
    expect(await second.exited).toEqual({ code: 0, signal: null });
    // The joiner's stop() was a no-op: the server outlives it.
    expect(await answers(started.connectionString!)).toBe(true);
    expect(postmasterPid(dataDir)).toBe(serverPid);

    owner.child.kill("SIGTERM");
    // The owner stops the server, then dies of the signal as it would have without a handler.
    expect(await owner.exited).toEqual({ code: null, signal: "SIGTERM" });
    expect(await waitForProcessGone(serverPid)).toBe(true);
    expect(await answers(started.connectionString!)).toBe(false);
    expect(existsSync(join(dataDir, "postmaster.pid"))).toBe(false); // a clean shutdown
  });

  it("stops on SIGINT of its owner", async () => {
    const dataDir = join(tempDir(), "pg");
    const owner = child("hold", dataDir);
    const started = await owner.next<ChildReport>(60_000);
    const serverPid = postmasterPid(dataDir);
    owner.child.kill("SIGINT");
    expect(await owner.exited).toEqual({ code: null, signal: "SIGINT" });
    expect(await waitForProcessGone(serverPid)).toBe(true);
    expect(await answers(started.connectionString!)).toBe(false);
  });

  it("stays up through its owner's own SIGTERM handler, and stops when the owner then exits", async () => {
    const dataDir = join(tempDir(), "pg");
    const owner = child("graceful", dataDir);
    const started = await owner.next<ChildReport>(60_000);
    expect(started).toMatchObject({ ok: true, owned: true });
    const serverPid = postmasterPid(dataDir);
    owner.child.kill("SIGTERM");
    // The application's handler could still use the database during its shutdown.
    expect(await owner.next()).toMatchObject({ shutdown: true, answer: 42 });
    expect(await owner.exited).toEqual({ code: 0, signal: null });
    expect(await waitForProcessGone(serverPid)).toBe(true);
  });

  it("stops when its owner exits on its own", async () => {
    const dataDir = join(tempDir(), "pg");
    const owner = child("exit", dataDir);
    const started = await owner.next<ChildReport>(60_000);
    expect(started).toMatchObject({ ok: true, owned: true });
    const serverPid = postmasterPid(dataDir);
    // Nothing keeps the owner alive: the server must not either.
    expect(await owner.exited).toEqual({ code: 0, signal: null });
    expect(await waitForProcessGone(serverPid)).toBe(true);
  });

  it("is started by exactly one of three processes racing, and shared by all", async () => {
    const dataDir = join(tempDir(), "pg");
    const racers = [child("hold", dataDir), child("hold", dataDir), child("hold", dataDir)];
    const reports = await Promise.all(racers.map((racer) => racer.next<ChildReport>(60_000)));
    for (const report of reports) expect(report, report.message).toMatchObject({ ok: true });
    expect(reports.filter((report) => report.owned)).toHaveLength(1);
    expect(new Set(reports.map((report) => report.port)).size).toBe(1);
    expect(await answers(reports[0]!.connectionString!)).toBe(true);

    const serverPid = postmasterPid(dataDir);
    const owner = racers[reports.findIndex((report) => report.owned)]!;
    for (const racer of racers) racer.child.kill("SIGTERM");
    await owner.exited;
    expect(await waitForProcessGone(serverPid)).toBe(true);
  });
});

describe("embedded PostgreSQL in this process", () => {
  // One cluster for these tests (creating one takes seconds); each test leaves it stopped.
  let dataDir: string;
  beforeAll(async () => {
    dataDir = join(tempDir(), "pg");
    await (await startEmbeddedPostgres({ dataDir })).stop();
  });

  it("keeps data across restarts, with stable credentials and a conveyor database", async () => {
    const lines: string[] = [];
    const first = await startEmbeddedPostgres({ dataDir, logger: (line) => lines.push(line) });
    expect(first.owned).toBe(true);
    expect(first.connectionString).toMatch(/^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/conveyor$/);
    expect(lines.some((line) => line.includes("ready to accept connections"))).toBe(true);

    const credentialsFile = `${dataDir}.json`;
    expect(statSync(credentialsFile).mode & 0o777).toBe(0o600);
    const credentials = JSON.parse(readFileSync(credentialsFile, "utf8")) as Record<string, string>;
    expect(credentials).toMatchObject({ user: "postgres", database: "conveyor" });
    expect(first.connectionString).toContain(encodeURIComponent(credentials.password!));

    const client = new pg.Client({ connectionString: first.connectionString });
    await client.connect();
    await client.query("CREATE TABLE kept (value text); INSERT INTO kept VALUES ('still here')");
    const { rows: listen } = await client.query(
      "SELECT current_setting('listen_addresses') AS a, current_setting('unix_socket_directories') AS s, current_setting('autovacuum_naptime') AS n",
    );
    expect(listen[0]).toEqual({ a: "127.0.0.1", s: "", n: "10s" });
    await client.end();
    await first.stop();
    await first.stop(); // twice is fine
    expect(await answers(first.connectionString)).toBe(false);

    const second = await startEmbeddedPostgres({ dataDir });
    try {
      expect(second.owned).toBe(true);
      const again = new pg.Client({ connectionString: second.connectionString });
      await again.connect();
      const { rows } = await again.query("SELECT value FROM kept");
      await again.end();
      expect(rows).toEqual([{ value: "still here" }]);
      expect(JSON.parse(readFileSync(credentialsFile, "utf8"))).toEqual(credentials);
    } finally {
      await second.stop();
    }
  });

  it("starts fresh over a stale postmaster.pid and a stale lock left by dead processes", async () => {
    const deadPid = await pidOfExitedProcess();
    // What a crashed server and a crashed starter leave behind.
    writeFileSync(join(dataDir, "postmaster.pid"), `${deadPid}\n${dataDir}\n1700000000\n5999\n`);
    writeFileSync(`${dataDir}.lock`, `${deadPid}\n`);
    const server = await startEmbeddedPostgres({ dataDir });
    try {
      expect(server.owned).toBe(true);
      expect(server.port).not.toBe(5999);
      expect(await answers(server.connectionString)).toBe(true);
      expect(existsSync(`${dataDir}.lock`)).toBe(false); // released after the start
    } finally {
      await server.stop();
    }
  });

  it("starts over a postmaster.pid whose pid now belongs to another live process", async () => {
    // PostgreSQL itself refuses such a file when it may signal that process: as root it runs as
    // `postgres`, so the impostor runs as `postgres` too; otherwise it runs as us.
    const ids = isRoot ? { uid: Number(execFileSync("id", ["-u", "postgres"])), gid: Number(execFileSync("id", ["-g", "postgres"])) } : {};
    const impostor = spawn("sleep", ["60"], ids);
    try {
      writeFileSync(join(dataDir, "postmaster.pid"), `${impostor.pid}\n${dataDir}\n1700000000\n5999\n`);
      const server = await startEmbeddedPostgres({ dataDir });
      try {
        expect(server.owned).toBe(true);
        expect(await answers(server.connectionString)).toBe(true);
        expect(postmasterPid(dataDir)).not.toBe(impostor.pid);
      } finally {
        await server.stop();
      }
    } finally {
      impostor.kill("SIGKILL");
    }
  });

  it("names a taken port in a one-line error", async () => {
    const blocker = await listenOnSomePort();
    try {
      const port = (blocker.address() as { port: number }).port;
      const error = await startEmbeddedPostgres({ dataDir, port }).catch((e: unknown) => e);
      expectOneLineError(error, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`));
    } finally {
      blocker.close();
    }
  });

  it("refuses a data directory that is a regular file, in one line", async () => {
    const file = join(tempDir(), "not-a-dir");
    writeFileSync(file, "hello");
    const error = await startEmbeddedPostgres({ dataDir: file }).catch((e: unknown) => e);
    expectOneLineError(error, /is not a directory/);
  });

  it("reports a directory PostgreSQL may not use as permission denied, in one line", async () => {
    const parent = mkdtempSync(join(tmpdir(), "conveyor-embedded-private-"));
    tempDirs.push(parent);
    // As root, the `postgres` user cannot enter a 0700 root directory; as anyone else, nobody can create inside 0500.
    chmodSync(parent, isRoot ? 0o700 : 0o500);
    const error = await startEmbeddedPostgres({ dataDir: join(parent, "sub", "pg") }).catch((e: unknown) => e);
    expectOneLineError(error, /permission denied/i);
    chmodSync(parent, 0o700);
  });
});

describe("embedded PostgreSQL on a full disk", () => {
  it("says the disk is full, in one line", async (context) => {
    // A 2 MB tmpfs is a real full disk: initdb cannot write its first 16 MB WAL segment.
    // Mounting needs root (and a container that allows it); elsewhere this case is skipped.
    const mountPoint = tempDir();
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", mountPoint], { stdio: "ignore" });
    } catch {
      context.skip("cannot mount a tmpfs here");
    }
    try {
      const error = await startEmbeddedPostgres({ dataDir: join(mountPoint, "pg") }).catch((e: unknown) => e);
      expectOneLineError(error, /disk full: .*No space left on device/);
    } finally {
      execFileSync("umount", [mountPoint]);
    }
  });
});

function expectOneLineError(error: unknown, pattern: RegExp): void {
  expect(error).toBeInstanceOf(EmbeddedPostgresError);
  const { code, message } = error as EmbeddedPostgresError;
  expect(code).toBe("EMBEDDED_POSTGRES");
  expect(message).toMatch(pattern);
  expect(message).not.toContain("\n");
}

function listenOnSomePort(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

/** The pid of a process that has exited (and been reaped), so nothing runs under it. */
async function pidOfExitedProcess(): Promise<number> {
  const exited = spawn(process.execPath, ["-e", ""]);
  await new Promise((resolve) => exited.once("exit", resolve));
  expect(processGone(exited.pid!)).toBe(true);
  return exited.pid!;
}
