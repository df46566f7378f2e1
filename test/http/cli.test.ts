/**
 * `conveyor api` and `conveyor keys` as real processes (the built CLI),
 * against the test database and a schema of this file's own.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quoteIdent } from "../../packages/core/src/store/db.js";
import { connectTestClient, testDatabaseUrl, uniqueSchemaName } from "../helpers/database.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CORE_ROOT = resolve(REPO_ROOT, "packages", "core");
const CLI = resolve(CORE_ROOT, "dist", "src", "cli", "main.js");
const EXAMPLE_JOBS = "packages/core/dist/examples/jobs.js";
const run = promisify(execFile);

const schema = uniqueSchemaName();
const env = () => ({ ...process.env, DATABASE_URL: testDatabaseUrl(), CONVEYOR_LOG_LEVEL: "info" });
const started: ChildProcess[] = [];

/** Run a CLI command to its end. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env: { ...env(), CONVEYOR_LOG_LEVEL: "warn" } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** Start `conveyor api` on a free port; resolves with its URL once it logs "API listening". */
async function startApi(): Promise<{ url: string; child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [CLI, "api", "--jobs", EXAMPLE_JOBS, "--port", "0", "--schema", schema], { cwd: REPO_ROOT, env: env() });
  started.push(child);
  let output = "";
  const exited = new Promise<number | null>((resolveExit) => child.once("exit", (code) => resolveExit(code)));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`conveyor api did not start: ${output}`)), 30_000);
    child.stderr!.on("data", (chunk) => (output += String(chunk)));
    child.stdout!.on("data", (chunk) => {
      output += String(chunk);
      const line = output.split("\n").find((entry) => entry.includes('"API listening"'));
      if (line) {
        clearTimeout(timer);
        resolveUrl(JSON.parse(line).url);
      }
    });
    void exited.then((code) => reject(new Error(`conveyor api exited with ${code}: ${output}`)));
  });
  return { url, child, output: () => output, exited };
}

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` before these tests`);
});
afterAll(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  const client = await connectTestClient();
  await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await client.end();
});

describe("conveyor keys and conveyor api", () => {
  it("creates keys that the API accepts, lists them, and revokes them", async () => {
    const created = await cli("keys", "create", "--tenant", "acme", "--name", "billing", "--schema", schema, "--json");
    expect(created.code, created.stderr).toBe(0);
    const tenantKey = JSON.parse(created.stdout.trim().split("\n").at(-1)!);
    expect(tenantKey).toMatchObject({ tenant: "acme", admin: false, name: "billing", key: expect.stringMatching(/^cvk_/) });
    expect(tenantKey.prefix).toBe(tenantKey.key.slice(0, 12));

    const text = await cli("keys", "create", "--admin", "--schema", schema);
    expect(text.code, text.stderr).toBe(0);
    const [adminKey, details, warning] = text.stdout.trim().split("\n");
    expect(adminKey).toMatch(/^cvk_[A-Za-z0-9_-]{43}$/);
    expect(details).toMatch(/^id [0-9a-f-]{36}, tenant default, admin$/);
    expect(warning).toMatch(/cannot be shown again/);

    const api = await startApi();
    const get = (path: string, key: string) => fetch(`${api.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    expect((await fetch(`${api.url}/readyz`)).status).toBe(200);
    const post = await fetch(`${api.url}/v1/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${tenantKey.key}`, "content-type": "application/json" },
      body: JSON.stringify({ kind: "email.send", payload: { to: "ada@example.com", subject: "Hi", body: "from the CLI test" } }),
    });
    expect(post.status).toBe(201);
    expect(((await post.json()) as { tenant: string }).tenant).toBe("acme");
    expect((await get("/v1/jobs", adminKey!)).status).toBe(200);

    const listed = await cli("keys", "list", "--schema", schema, "--json");
    expect(listed.code, listed.stderr).toBe(0);
    // One JSON document, { items: [...] }, like every other list.
    const records = JSON.parse(listed.stdout).items;
    expect(records.map((record: { tenant: string; admin: boolean }) => [record.tenant, record.admin])).toEqual([
      ["acme", false],
      ["default", true],
    ]);
    expect(listed.stdout).not.toContain(tenantKey.key); // never the key itself
    const table = await cli("keys", "list", "--schema", schema);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+PREFIX\s+TENANT\s+ADMIN\s+NAME\s+CREATED\s+LAST USED\s+REVOKED$/);
    expect(table.stdout).toContain(`${tenantKey.prefix}…`);

    const revoked = await cli("keys", "revoke", tenantKey.id, "--schema", schema);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toMatch(/^revoked /);
    expect((await get("/v1/jobs", tenantKey.key)).status).toBe(401);

    // SIGTERM: finish in flight, exit 0.
    api.child.kill("SIGTERM");
    expect(await api.exited).toBe(0);
    expect(api.output()).toContain('"shutting down: finishing in-flight requests"');
  }, 60_000);

  it("refuses bad arguments with one line on stderr", async () => {
    const busy: Server = createServer();
    await new Promise<void>((resolveListen) => busy.listen(0, "127.0.0.1", resolveListen));
    const busyPort = (busy.address() as AddressInfo).port;
    const cases = [
      {
        args: ["api", "--port", String(busyPort), "--jobs", EXAMPLE_JOBS, "--schema", schema],
        mentions: new RegExp(`^conveyor: port ${busyPort} on 127\\.0\\.0\\.1 is in use: pass --port <another>, or --port 0 for a free one$`),
      },
      { args: ["keys", "revoke", "not-a-uuid", "--schema", schema], mentions: /id must be a UUID/ },
      { args: ["keys", "revoke", "0190f5c2-0000-7000-8000-000000000000", "--schema", schema], mentions: /not found/ },
      { args: ["keys", "create", "--tenant", "", "--schema", schema], mentions: /tenant/ },
      { args: ["api", "--port", "99999", "--jobs", EXAMPLE_JOBS], mentions: /port/ },
      { args: ["api"], mentions: /--jobs/ },
    ];
    for (const { args, mentions } of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(" ")).not.toBe(0);
      const lines = result.stderr.split("\n").filter((line) => line.trim() !== "");
      expect(lines, result.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(mentions);
    }
    busy.close();
  }, 60_000);
});
