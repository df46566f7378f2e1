/**
 * Ctrl-C on `conveyor dev` with its embedded PostgreSQL: the terminal sends
 * SIGINT to the whole foreground process group, so this test starts the CLI
 * as the leader of its own group and signals the group, as a terminal does.
 * The stack must stop in order (the worker hands its job back while the
 * database is still up, then the API, then PostgreSQL), so the running job
 * is back in the queue with an `interrupted` attempt that does not count.
 * DATABASE_URL is unset: each run has its own directory and embedded server.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isProcessAlive } from "../../packages/embedded/src/postmaster.js";
import { assertBuilt, CLI, CORE_ROOT, REPO_ROOT, runCli, stderrLines } from "./support.js";
import { StopWaiting, waitFor } from "../helpers/wait-for.js";

const directories: string[] = [];
const started: ChildProcess[] = [];
const postmasters: number[] = [];

/** The environment without DATABASE_URL, so the CLI starts embedded PostgreSQL in its cwd. */
function embeddedEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: "", CONVEYOR_LOG_LEVEL: "info" };
  delete env.DATABASE_URL;
  return env;
}

function postmasterPid(cwd: string): number {
  return Number.parseInt(readFileSync(join(cwd, ".conveyor", "postgres", "postmaster.pid"), "utf8").split("\n")[0]!, 10);
}

afterAll(async () => {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  for (const pid of postmasters) {
    if (isProcessAlive(pid)) process.kill(pid, "SIGQUIT");
  }
  await Promise.all(directories.map((dir) => rm(dir, { recursive: true, force: true })));
});

async function freshDirectory(): Promise<string> {
  const cwd = await mkdtemp(join(tmpdir(), "conveyor-dev-stop-"));
  directories.push(cwd);
  // As root, PostgreSQL runs as the `postgres` OS user, which must reach the data directory.
  await chmod(cwd, 0o755);
  return cwd;
}

describe("conveyor dev on Ctrl-C with embedded PostgreSQL", () => {
  it("hands the running job back as interrupted, then stops the API, then PostgreSQL", async () => {
    assertBuilt();
    const cwd = await freshDirectory();
    const indexUrl = pathToFileURL(join(CORE_ROOT, "dist", "src", "index.js")).href;
    await writeFile(
      join(cwd, "jobs.mjs"),
      `import { defineJob } from ${JSON.stringify(indexUrl)};
// Runs until its signal aborts (the worker's shutdown past its grace period), then gives up.
export default [defineJob({
  kind: "test.long",
  // Any payload: a Standard Schema validator that accepts everything.
  schema: { "~standard": { version: 1, vendor: "test", validate: (value) => ({ value }) } },
  handler: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
})];
`,
    );
    const child = spawn(process.execPath, [CLI, "dev", "--port", "0", "--jobs", "./jobs.mjs", "--concurrency", "1"], {
      cwd,
      env: embeddedEnv(),
      // Leader of its own process group, so the whole group can be signalled as a terminal does.
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    started.push(child);
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    const output = () => `--- stdout ---\n${stdout.slice(-4000)}\n--- stderr ---\n${stderr.slice(-4000)}`;

    const banner = await waitFor(
      "the dev banner",
      () => {
        if (child.exitCode !== null) throw new StopWaiting(`conveyor dev exited early\n${output()}`);
        return stdout.match(/^ {2}dashboard +(http:\/\/127\.0\.0\.1:\d+)\/#key=(cvk_[A-Za-z0-9_-]+)$/m);
      },
      90_000,
      100,
    );
    const [, url, key] = banner;
    const postmaster = postmasterPid(cwd);
    postmasters.push(postmaster);
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const created = await fetch(`${url}/v1/jobs`, { method: "POST", headers, body: JSON.stringify({ kind: "test.long", payload: {} }) });
    expect(created.status, await created.clone().text()).toBe(201);
    const { id } = (await created.json()) as { id: string };
    await waitFor(
      "the job to run",
      async () => {
        const response = await fetch(`${url}/v1/jobs/${id}`, { headers });
        return ((await response.json()) as { status: string }).status === "running";
      },
      30_000,
    );

    // Ctrl-C: SIGINT to every process in the group.
    process.kill(-child.pid!, "SIGINT");
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      exited,
      new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), 45_000))),
    ]);
    clearTimeout(timer);
    expect(result, output()).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('"msg":"worker stopped"');
    // PostgreSQL went with it.
    await waitFor("the embedded PostgreSQL to stop", () => !isProcessAlive(postmaster), 10_000);

    // Read the outcome back through the CLI, which starts the embedded server again.
    const shown = await runCli(["jobs", "show", id!, "--json"], { cwd, env: embeddedEnv(), timeoutMs: 90_000 });
    expect(shown.code, shown.stderr).toBe(0);
    const job = JSON.parse(shown.stdout) as { status: string; attempts: number; executions: Array<{ outcome: string | null }> };
    expect(job.status).toBe("queued");
    expect(job.attempts).toBe(0);
    expect(job.executions.map((execution) => execution.outcome)).toEqual(["interrupted"]);
  }, 240_000);

  it("stops the embedded server when it fails after starting it, and leaves it to be joined after SIGKILL", async () => {
    const cwd = await freshDirectory();
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const busyPort = (busy.address() as AddressInfo).port;
    try {
      // An error exit after PostgreSQL started: one line, non-zero, and the server is gone.
      const failed = await runCli(["dev", "--port", String(busyPort), "--no-demo"], { cwd, env: embeddedEnv(), timeoutMs: 90_000 });
      expect(failed.code).toBe(1);
      expect(stderrLines(failed)).toEqual([`conveyor: port ${busyPort} on 127.0.0.1 is in use: pass --port <another>, or --port 0 for a free one`]);
      expect(existsSync(join(cwd, ".conveyor", "postgres", "postmaster.pid"))).toBe(false);
    } finally {
      busy.close();
    }

    // SIGKILL gives the CLI no chance to stop its server: it keeps running, and the next command joins it.
    const child = spawn(process.execPath, [CLI, "dev", "--port", "0", "--no-demo"], { cwd, env: embeddedEnv(), stdio: ["ignore", "pipe", "pipe"] });
    started.push(child);
    let stdout = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    await waitFor("the dev banner", () => child.exitCode === null && /^ {2}dashboard /m.test(stdout), 90_000);
    const postmaster = postmasterPid(cwd);
    postmasters.push(postmaster);
    child.kill("SIGKILL");
    await exited;
    expect(isProcessAlive(postmaster)).toBe(true);
    const joined = await runCli(["queues"], { cwd, env: { ...embeddedEnv(), CONVEYOR_LOG_LEVEL: "info" }, timeoutMs: 60_000 });
    expect(joined.code, joined.stderr).toBe(0);
    expect(joined.stderr).toContain("using the embedded PostgreSQL another Conveyor process started");
    expect(postmasterPid(cwd)).toBe(postmaster);
  }, 240_000);
});
