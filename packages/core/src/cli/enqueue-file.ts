import { createReadStream, statSync } from "node:fs";
import { createInterface } from "node:readline";
import { type Readable, Transform } from "node:stream";
import type { EnqueueManyItem } from "../client/conveyor-client.js";
import type { Conveyor } from "../conveyor.js";
import { ConfigError, ValidationError } from "../core/errors.js";
import { checkOut } from "../store/db.js";
import type { batchJobItem } from "../wire/job-request.js";
import { parseStrictJson } from "../wire/strict-json.js";
import { ProgressBar } from "./progress.js";

/** Jobs per `enqueueMany` statement while streaming a file. */
export const FILE_BATCH_SIZE = 1_000;

/** Defaults from the command line for lines that do not set them. */
export interface LineDefaults {
  queue?: string;
  priority?: number;
  maxAttempts?: number;
  tenant?: string;
}

export interface FileEnqueueResult {
  /** Jobs this run created. */
  enqueued: number;
  /** Lines answered by a job that already existed (its idempotency key, or a unique key held by it). */
  existing: number;
  /** Non-blank lines read. */
  lines: number;
  ms: number;
}

/**
 * Enqueue every line of an NDJSON file (or stdin for "-"): each line is one
 * job with the fields of a `POST /v1/jobs/batch` item (`kind`, `payload`,
 * and optionally `queue`, `priority`, `maxAttempts`, `runAt`, `delayMs`,
 * `idempotencyKey`, `tenant`, `unique`). The file is streamed in batches of
 * `FILE_BATCH_SIZE`, all inside one transaction: a bad line (named by its
 * number) or any failure leaves nothing enqueued, and workers see the jobs
 * when the whole file is in.
 */
export async function enqueueFile(conveyor: Conveyor, path: string, defaults: LineDefaults, showProgress: boolean): Promise<FileEnqueueResult> {
  const started = Date.now();
  const size = checkInput(path);
  const name = path === "-" ? "stdin" : path;
  const lineSchema = await loadLineSchema();
  const progress = showProgress ? new ProgressBar("enqueue", size) : null;
  const client = await checkOut(conveyor.pool);
  const result: FileEnqueueResult = { enqueued: 0, existing: 0, lines: 0, ms: 0 };
  let batch: EnqueueManyItem[] = [];
  let batchLines: number[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    try {
      const jobs = await conveyor.enqueueMany(batch, { tx: client });
      for (const job of jobs) job.created ? result.enqueued++ : result.existing++;
    } catch (error) {
      throw atLine(error, name, batchLines);
    }
    batch = [];
    batchLines = [];
  };
  let input: ReturnType<typeof openInput> | undefined;
  try {
    await client.query("BEGIN");
    // Opened only now, with no await before the loop: lines readline emits
    // before the loop starts reading them would be lost.
    input = openInput(path);
    const lines = createInterface({ input: input.stream, crlfDelay: Infinity });
    let lineNumber = 0;
    for await (const line of lines) {
      lineNumber++;
      if (line.trim() === "") continue;
      result.lines++;
      batch.push(parseLine(lineSchema, line, `${name}:${lineNumber}`, defaults));
      batchLines.push(lineNumber);
      if (batch.length >= FILE_BATCH_SIZE) {
        await flush();
        progress?.update(input.bytesRead(), result.enqueued + result.existing);
      }
    }
    if (result.lines === 0) throw new ConfigError(`${name} has no jobs in it (expected one JSON object per line)`);
    await flush();
    await client.query("COMMIT");
  } catch (error) {
    progress?.abandon();
    input?.stream.destroy();
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
  result.ms = Date.now() - started;
  progress?.finish(input!.bytesRead(), result.enqueued + result.existing);
  return result;
}

/** Refuse a path that is not a readable file before any database work; its size, or null for stdin. */
function checkInput(path: string): number | null {
  if (path === "-") return null;
  let isFile: boolean;
  let size: number;
  try {
    const stats = statSync(path);
    isFile = stats.isFile();
    size = stats.size;
  } catch (error) {
    throw new ConfigError(`--file: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (!isFile) throw new ConfigError(`--file: ${path} is not a file`);
  return size;
}

function openInput(path: string): { stream: Readable; bytesRead: () => number } {
  if (path === "-") {
    let bytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    return { stream: process.stdin.pipe(counter), bytesRead: () => bytes };
  }
  const stream = createReadStream(path);
  return { stream, bytesRead: () => stream.bytesRead };
}

/**
 * The schema of a line: the HTTP API's batch item. It is a zod schema, and
 * zod is an optional peer of this package (the HTTP package brings it), so
 * it is loaded here, by the one command that needs it.
 */
async function loadLineSchema(): Promise<typeof batchJobItem> {
  try {
    return (await import("../wire/job-request.js")).batchJobItem;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === "ERR_MODULE_NOT_FOUND" && message.includes("'zod'")) {
      throw new ConfigError("enqueue --file checks each line with zod, which is not installed: npm install zod");
    }
    throw error;
  }
}

/** One line → one enqueueMany item, with the same rules (and JSON exactness) as the HTTP API. */
function parseLine(schema: typeof batchJobItem, line: string, where: string, defaults: LineDefaults): EnqueueManyItem {
  let value: unknown;
  try {
    value = parseStrictJson(Buffer.from(line, "utf8"));
  } catch (error) {
    throw new ValidationError(`${where}: ${(error as Error).message.replace(/^request body /, "line ")}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.map(String).join(".") || "line"}: ${issue.message}`);
    throw new ValidationError(`${where}: ${issues.join("; ")}`);
  }
  const { kind, payload, runAt, ...options } = parsed.data;
  return {
    job: kind,
    payload,
    ...(runAt === undefined ? {} : { runAt: new Date(runAt) }),
    ...options,
    queue: options.queue ?? defaults.queue,
    priority: options.priority ?? defaults.priority,
    maxAttempts: options.maxAttempts ?? defaults.maxAttempts,
    tenant: options.tenant ?? defaults.tenant,
  };
}

/** enqueueMany names the failing item as `jobs[i]`; name the file line instead. */
function atLine(error: unknown, name: string, lineNumbers: number[]): unknown {
  if (!(error instanceof ValidationError)) return error;
  const match = /^jobs\[(\d+)\]: (.*)$/s.exec(error.message);
  if (!match) return error;
  const line = lineNumbers[Number(match[1])];
  return new ValidationError(`${name}:${line}: ${match[2]}`, error.issues);
}
