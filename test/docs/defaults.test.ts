import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import * as defaults from "../../packages/core/src/core/defaults.js";
import { formatDuration } from "../../packages/core/src/core/duration.js";
import { REPO_ROOT } from "../helpers/child-process.js";

/**
 * Defaults are set once, in src/core/defaults.ts; the docs and the JSDoc
 * restate them for readers. This checks every restatement against the
 * constant: the option tables of the guides, the `NAME` (value) mentions
 * in docs and source, the `@defaultValue` tags, and the defaults the CLI
 * guide quotes. Change a constant and this names each place to update.
 */

const CONSTANTS = defaults as unknown as Record<string, unknown>;

const MS: Record<string, number> = { ms: 1, s: 1_000, min: 60_000, minute: 60_000, minutes: 60_000, h: 3_600_000, hour: 3_600_000, hours: 3_600_000 };
Object.assign(MS, { d: 86_400_000, day: 86_400_000, days: 86_400_000, year: 365 * 86_400_000, years: 365 * 86_400_000 });
const BYTES: Record<string, number> = { KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

/**
 * A value as the docs write it, read back: `60000`, `1,000`, `60 s`,
 * `7 days`, `1 MiB`, `2000-01-01` (epoch ms), `"off"`, `` `127.0.0.1` ``, `["queued"]`. Undefined
 * when the text is not one value.
 */
function readValue(written: string): unknown {
  const text = written.trim().replace(/^`(.*)`$/, "$1");
  const plain = text.replace(/(\d)[,_](?=\d{3})/g, "$1");
  if (/^-?\d+(\.\d+)?$/.test(plain)) return Number(plain);
  if (plain === "true" || plain === "false") return plain === "true";
  const duration = /^(\d+(?:\.\d+)?) ?([a-z]+)$/.exec(plain);
  if (duration && MS[duration[2]!] !== undefined) return Number(duration[1]) * MS[duration[2]!]!;
  if (/^\d{4}-\d{2}-\d{2}$/.test(plain)) return Date.parse(`${plain}T00:00:00Z`);
  const size = /^(\d+(?:\.\d+)?) ?([KMG]iB)$/.exec(plain);
  if (size) return Number(size[1]) * BYTES[size[2]!]!;
  if (/^["[]/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      return undefined;
    }
  }
  // A bare word in backticks is a string: `127.0.0.1`, `conveyor`.
  return written.trim().startsWith("`") && /^[\w.:-]+$/.test(text) ? text : undefined;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function files(dir: string, extension: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(extension) && !entry.name.endsWith(".test.ts"))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => !path.includes(`${join("docs", "api")}`) && !path.endsWith(join("core", "defaults.ts")));
}

const DOCS = [resolve(REPO_ROOT, "README.md"), ...files(resolve(REPO_ROOT, "docs"), ".md")];
const SOURCES = ["core", "http", "embedded"].flatMap((name) => files(resolve(REPO_ROOT, "packages", name, "src"), ".ts"));

/** Text with JSDoc line breaks (`\n   * `) and markdown line breaks joined, so a mention split over two lines reads as one. */
const joined = (text: string) => text.replace(/\n[ \t]*\*?[ \t]*/g, " ");

describe("defaults restated in the docs and JSDoc", () => {
  it("reads the ways the docs write values", () => {
    expect([readValue("60000"), readValue("1,000"), readValue("60 s"), readValue("7 days"), readValue("5 min")]).toEqual([60_000, 1_000, 60_000, 604_800_000, 300_000]);
    expect([readValue("1 MiB"), readValue('"off"'), readValue("`127.0.0.1`"), readValue('`["a", "b"]`'), readValue("every tenant")]).toEqual([1_048_576, "off", "127.0.0.1", ["a", "b"], undefined]);
    expect(readValue("2000-01-01")).toBe(Date.UTC(2000, 0, 1));
  });

  it("match every `NAME` (value) mention of a constant", () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const file of [...DOCS, ...SOURCES]) {
      const text = joined(readFileSync(file, "utf8"));
      for (const [, name, written] of text.matchAll(/`([A-Z][A-Z0-9_]+)`,? \(([^()]*)\)/g)) {
        if (!(name! in CONSTANTS)) continue;
        const value = readValue(written!);
        if (value === undefined) continue; // "(one day; …)": prose, not a value
        checked++;
        if (!same(value, CONSTANTS[name!])) wrong.push(`${relative(REPO_ROOT, file)}: \`${name}\` (${written}), but it is ${JSON.stringify(CONSTANTS[name!])}`);
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(40);
  });

  it("match every @defaultValue tag, each naming its constant", () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const file of SOURCES) {
      // A tag is one line, as every tag here is written.
      for (const [tag] of readFileSync(file, "utf8").matchAll(/@defaultValue.*$/gm)) {
        const match = /^@defaultValue `([A-Z][A-Z0-9_]+)` \((.+)\)$/.exec(tag.trim());
        const where = `${relative(REPO_ROOT, file)}: ${tag.trim()}`;
        if (!match) wrong.push(`${where}: expected @defaultValue \`CONSTANT\` (value)`);
        else if (!(match[1]! in CONSTANTS)) wrong.push(`${where}: no such constant in defaults.ts`);
        else if (!same(readValue(match[2]!), CONSTANTS[match[1]!])) wrong.push(`${where}: it is ${JSON.stringify(CONSTANTS[match[1]!])}`);
        checked++;
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(15);
  });

  /** The options tables: guide, option (its first `code` cell), the constant its default cell states. */
  const TABLES: Array<[string, Record<string, string>]> = [
    [
      "docs/workers.md",
      {
        concurrency: "DEFAULT_CONCURRENCY",
        leaseMs: "DEFAULT_LEASE_MS",
        heartbeatMs: "DEFAULT_HEARTBEAT_MS",
        pollIntervalMs: "DEFAULT_POLL_INTERVAL_MS",
        reclaimIntervalMs: "DEFAULT_RECLAIM_INTERVAL_MS",
        shutdownGraceMs: "DEFAULT_SHUTDOWN_GRACE_MS",
        claimBatchSize: "DEFAULT_CLAIM_BATCH_SIZE",
        progressIntervalMs: "DEFAULT_PROGRESS_INTERVAL_MS",
        fairness: "DEFAULT_FAIRNESS",
      },
    ],
    [
      "docs/http-api.md",
      {
        port: "DEFAULT_API_PORT",
        host: "DEFAULT_API_HOST",
        bodyLimit: "DEFAULT_HTTP_BODY_LIMIT_BYTES",
        requestTimeoutMs: "DEFAULT_HTTP_REQUEST_TIMEOUT_MS",
        bulkActionSweepMs: "BULK_ACTION_SWEEP_INTERVAL_MS",
      },
    ],
    ["docs/jobs.md", { maxAttempts: "DEFAULT_MAX_ATTEMPTS", timeoutMs: "DEFAULT_TIMEOUT_MS", queue: "DEFAULT_QUEUE", priority: "DEFAULT_PRIORITY" }],
    [
      "docs/operations.md",
      {
        finishedMs: "DEFAULT_RETENTION_FINISHED_MS",
        deadLetterMs: "DEFAULT_RETENTION_DEAD_LETTER_MS",
        batchSize: "DEFAULT_RETENTION_BATCH_SIZE",
        intervalMs: "DEFAULT_RETENTION_INTERVAL_MS",
      },
    ],
    ["docs/cron.md", { timezone: "DEFAULT_CRON_TIMEZONE" }],
    ["docs/enqueueing.md", { states: "DEFAULT_UNIQUE_STATES", onConflict: "DEFAULT_UNIQUE_ON_CONFLICT" }],
    ["docs/limits-and-fairness.md", { fairness: "DEFAULT_FAIRNESS" }],
  ];

  /** Each table row's second cell, by the first `code` of its first cell; the first row of a name wins. */
  function defaultCells(markdown: string): Map<string, string> {
    const cells = new Map<string, string>();
    for (const [, first, second] of markdown.matchAll(/^\|([^|\n]*)\|([^|\n]*)\|/gm)) {
      const name = /`([^`]+)`/.exec(first!)?.[1];
      if (name && !cells.has(name)) cells.set(name, second!.trim());
    }
    return cells;
  }

  it.each(TABLES)("match the options table of %s", (file, rows) => {
    const cells = defaultCells(readFileSync(resolve(REPO_ROOT, file), "utf8"));
    const wrong: string[] = [];
    for (const [option, name] of Object.entries(rows)) {
      const cell = cells.get(option);
      // The value comes first; what follows in parentheses or after a comma says more ("0 (none)", "5 min (`…`), ±25% jitter").
      const value = cell === undefined ? undefined : readValue(/^`[^`]*`/.exec(cell)?.[0] ?? cell.split(/ \(|, /)[0]!);
      if (!same(value, CONSTANTS[name])) wrong.push(`${option}: the table says ${JSON.stringify(cell)}, ${name} is ${JSON.stringify(CONSTANTS[name])}`);
    }
    expect(wrong).toEqual([]);
  });

  it("match the composite defaults of the worker's retention and a job's backoff", () => {
    const days = (ms: number) => `${ms / 86_400_000} d`;
    const retention = defaultCells(readFileSync(resolve(REPO_ROOT, "docs/workers.md"), "utf8")).get("retention");
    const finished = days(defaults.DEFAULT_RETENTION_FINISHED_MS);
    const dead = days(defaults.DEFAULT_RETENTION_DEAD_LETTER_MS);
    const every = `${defaults.DEFAULT_RETENTION_INTERVAL_MS / 60_000} min`;
    expect(retention).toBe(`on: ${finished}, ${dead}, every ${every}, ${defaults.DEFAULT_RETENTION_BATCH_SIZE.toLocaleString("en-US")} rows`);
    const backoff = defaultCells(readFileSync(resolve(REPO_ROOT, "docs/jobs.md"), "utf8")).get("backoff");
    const { DEFAULT_BACKOFF_BASE_MS: base, DEFAULT_BACKOFF_CAP_MS: cap, DEFAULT_BACKOFF_JITTER: jitter } = defaults;
    expect(backoff).toBe(`\`{ baseMs: ${base}, capMs: ${cap}, jitter: ${jitter} }\``);
  });

  it("match the defaults the CLI guide quotes", () => {
    const cli = joined(readFileSync(resolve(REPO_ROOT, "docs/cli.md"), "utf8"));
    const quoted = [
      `conveyor dev [--port ${defaults.DEFAULT_API_PORT}] [--host ${defaults.DEFAULT_API_HOST}] [--jobs m] [--concurrency ${defaults.DEFAULT_DEV_CONCURRENCY}]`,
      `conveyor api --jobs <module> [--port ${defaults.DEFAULT_API_PORT}] [--host ${defaults.DEFAULT_API_HOST}]`,
      `conveyor jobs list [<search flags>] [--limit ${defaults.DEFAULT_LIST_LIMIT}]`,
      `exact up to ${defaults.DEFAULT_EXACT_COUNT_LIMIT.toLocaleString("en-US")}`,
      `above ${defaults.QUEUE_EXACT_COUNT_LIMIT.toLocaleString("en-US")} jobs of a state`,
      `conveyor prune [--finished-older-than ${formatDuration(defaults.DEFAULT_RETENTION_FINISHED_MS)}] ` +
        `[--dead-older-than ${formatDuration(defaults.DEFAULT_RETENTION_DEAD_LETTER_MS)}] [--batch-size ${defaults.DEFAULT_RETENTION_BATCH_SIZE}]`,
      `on \`--port\` (default ${defaults.DEFAULT_API_PORT};`,
      `and \`--host\` (default ${defaults.DEFAULT_API_HOST})`,
      `(\`--concurrency\`, default ${defaults.DEFAULT_DEV_CONCURRENCY})`,
    ];
    expect(quoted.filter((text) => !cli.includes(text))).toEqual([]);
    const lists = [...cli.matchAll(/`conveyor (\w+) list[^`]*\[--limit (\d+)\]/g)];
    expect(lists.length).toBeGreaterThanOrEqual(4);
    expect(lists.filter(([, , limit]) => Number(limit) !== defaults.DEFAULT_LIST_LIMIT).map(([text]) => text)).toEqual([]);
  });
});
