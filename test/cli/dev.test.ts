/**
 * `conveyor dev` as a real process against the test database: the API and
 * dashboard on one port, an admin key, the demo jobs run by its worker
 * (including real webhook deliveries to its own receiver, one retried after
 * a 503), and a clean exit on Ctrl-C (SIGINT). Each run works in a fresh
 * directory, where the example jobs write their outbox and webhooks.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { quoteIdent } from "../../packages/core/src/store/db.js";
import { connectTestClient, uniqueSchemaName } from "../helpers/database.js";
import { CliServer, cliEnv, killAllServers, runCli, stderrLines } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

const schema = uniqueSchemaName();
const directories: string[] = [];
const KNOWN_KEY = "cvk_test-known-admin-key-0123456789";

async function freshDirectory(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "conveyor-dev-"));
  directories.push(dir);
  return dir;
}

/** Start `conveyor dev --port 0` and read its banner. */
async function startDev(cwd: string, extraEnv: NodeJS.ProcessEnv = {}, args: string[] = []) {
  const server = new CliServer(["dev", "--port", "0", "--schema", schema, ...args], {
    cwd,
    env: cliEnv({ CONVEYOR_LOG_LEVEL: "info", ...extraEnv }),
  });
  const [, url, key] = await server.waitFor(/^ {2}dashboard +(http:\/\/127\.0\.0\.1:\d+)\/#key=(cvk_[A-Za-z0-9_-]+)$/m);
  return { server, url: url!, key: key! };
}

afterEach(() => killAllServers());
afterAll(async () => {
  await killAllServers();
  const client = await connectTestClient();
  await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
  await client.end();
  await Promise.all(directories.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("conveyor dev", () => {
  it("serves the API and dashboard, prints an admin key, runs the demo jobs, and stops on Ctrl-C", async () => {
    const cwd = await freshDirectory();
    const { server, url, key } = await startDev(cwd);
    expect(server.stdout).toMatch(/^ {2}admin key +cvk_\S+ {2}\(new; saved in \.conveyor\/dev-admin-key\)$/m);
    const saved = join(cwd, ".conveyor", "dev-admin-key");
    expect(readFileSync(saved, "utf8").trim()).toBe(key);
    expect(statSync(saved).mode & 0o777).toBe(0o600);

    const api = async (path: string) => {
      const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } });
      expect(response.status, path).toBe(200);
      return (await response.json()) as any;
    };
    // The dashboard is served at / on the same port, with its security headers.
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await page.text()).toMatch(/<div id="app"><\/div>/);

    // The banner names the interactive docs and the OpenAPI document for what each one is.
    expect(server.stdout).toMatch(new RegExp(`^ {2}API docs +${url}/docs {2}\\(interactive, Swagger UI\\)$`, "m"));
    expect(server.stdout).toMatch(new RegExp(`^ {2}OpenAPI +${url}/openapi\\.json {2}\\(the OpenAPI 3\\.1 document\\)$`, "m"));
    const docs = await fetch(`${url}/docs`);
    expect(docs.status).toBe(200);
    expect(docs.headers.get("content-type")).toMatch(/^text\/html/);
    const openapi = await fetch(`${url}/openapi.json`);
    expect(openapi.headers.get("content-type")).toMatch(/^application\/json/);
    expect(((await openapi.json()) as { openapi: string }).openapi).toMatch(/^3\.1\./);

    // The demo jobs run: emails (one dead-lettered), a summary, and two webhooks to the local receiver.
    const finished = await waitFor(
      "the demo jobs to finish",
      async () => {
        const { items } = await api("/v1/jobs?limit=20");
        return items.length === 5 && items.every((job: { status: string }) => ["succeeded", "dead"].includes(job.status)) ? items : null;
      },
      45_000,
      250,
    );
    const byKind = (kind: string) => finished.filter((job: { kind: string }) => job.kind === kind);
    expect(byKind("email.send").map((job: { status: string }) => job.status).sort()).toEqual(["dead", "succeeded"]);
    expect(byKind("text.summarize")[0].status).toBe("succeeded");
    const hooks = byKind("webhook.deliver");
    expect(hooks.map((job: { status: string }) => job.status)).toEqual(["succeeded", "succeeded"]);
    const flaky = hooks.find((job: { payload: { url: string } }) => job.payload.url.endsWith("/hooks/flaky"));
    const retried = await api(`/v1/jobs/${flaky.id}`);
    expect(retried.executions.map((e: { outcome: string }) => e.outcome)).toEqual(["failed", "succeeded"]);
    expect(retried.executions[0].error.message).toMatch(/answered 503; will retry/);

    // The receiver checked the signatures and saved both deliveries; the email went to the outbox.
    const received = readdirSync(join(cwd, ".conveyor", "webhooks")).map((file) => JSON.parse(readFileSync(join(cwd, ".conveyor", "webhooks", file), "utf8")));
    expect(received.map((entry) => entry.hook).sort()).toEqual(["flaky", "orders"]);
    expect(received.find((entry) => entry.hook === "orders").body).toEqual({
      id: expect.any(String),
      event: "order.created",
      data: { orderId: 1042, total: "19.90" },
    });
    expect(readdirSync(join(cwd, ".conveyor", "outbox"))).toHaveLength(1);
    expect((await api("/v1/workers")).items).toHaveLength(1);

    // Ctrl-C: the worker stops, the API closes, exit 0.
    expect(await server.stop("SIGINT")).toBe(0);
    expect(server.stdout).toContain('"msg":"shutting down gracefully"');
    expect(server.stdout).toContain('"msg":"worker stopped"');
  }, 90_000);

  it("uses CONVEYOR_ADMIN_KEY when set, and a key saved by an earlier run otherwise", async () => {
    const cwd = await freshDirectory();
    const known = await startDev(cwd, { CONVEYOR_ADMIN_KEY: KNOWN_KEY }, ["--no-demo"]);
    expect(known.key).toBe(KNOWN_KEY);
    expect(known.server.stdout).toMatch(/\(from CONVEYOR_ADMIN_KEY\)$/m);
    const response = await fetch(`${known.url}/v1/jobs`, { headers: { authorization: `Bearer ${KNOWN_KEY}` } });
    expect(response.status).toBe(200);
    expect(existsSync(join(cwd, ".conveyor", "dev-admin-key"))).toBe(false);
    expect(await known.server.stop("SIGTERM")).toBe(0);

    const first = await startDev(cwd, {}, ["--no-demo"]);
    expect(await first.server.stop("SIGINT")).toBe(0);
    const second = await startDev(cwd, {}, ["--no-demo"]);
    expect(second.key).toBe(first.key);
    expect(second.server.stdout).toMatch(/\(saved in \.conveyor\/dev-admin-key\)$/m);
    expect(await second.server.stop("SIGINT")).toBe(0);
  }, 90_000);

  it("refuses bad arguments with one line and a non-zero exit", async () => {
    const cwd = await freshDirectory();
    const busy: Server = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const busyPort = (busy.address() as { port: number }).port;
    try {
      const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
        [["dev", "--port", "99999"], {}, /--port.*expected a port 0-65535/],
        [["dev", "--concurrency", "0"], {}, /--concurrency.*expected a whole number >= 1/],
        [["dev", "--port", "0", "--schema", schema, "--no-demo"], { CONVEYOR_ADMIN_KEY: "letmein" }, /CONVEYOR_ADMIN_KEY must be cvk_ followed by 16-124/],
        [["dev", "--port", String(busyPort), "--schema", schema, "--no-demo"], {}, new RegExp(`port ${busyPort} on 127\\.0\\.0\\.1 is in use`)],
      ];
      for (const [args, env, mentions] of cases) {
        const result = await runCli(args, { cwd, env: cliEnv({ CONVEYOR_LOG_LEVEL: "warn", ...env }), timeoutMs: 60_000 });
        expect(result.code, args.join(" ")).not.toBe(0);
        expect(stderrLines(result), result.stderr).toHaveLength(1);
        expect(stderrLines(result)[0]).toMatch(mentions);
      }
    } finally {
      busy.close();
    }
  }, 120_000);
});
