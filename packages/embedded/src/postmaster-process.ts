import { type ChildProcess, execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { EmbeddedPostgresError } from "conveyor-jobs";

const execFileAsync = promisify(execFile);

/** The line PostgreSQL prints once it accepts connections. */
const READY = "database system is ready to accept connections";

export interface PostmasterOptions {
  /** Path of the `postgres` binary. */
  binary: string;
  dataDir: string;
  port: number;
  flags: readonly string[];
  /** Receives the server's output (stderr), chunk by chunk. */
  onOutput(chunk: string): void;
}

/**
 * Start `postgres` on a data directory and resolve once it accepts
 * connections; reject when it exits (or cannot be spawned) before that.
 *
 * The server runs in a session and process group of its own (`detached`), so
 * the signals a terminal sends to its foreground group (Ctrl-C, Ctrl-\) reach
 * the application only. The application can then finish its shutdown, which
 * needs the database (a worker handing its jobs back), and stop the server
 * last. Its owner stops it explicitly (lifecycle.ts), also on exit.
 *
 * As root it runs as the `postgres` OS user, since PostgreSQL refuses root;
 * the cluster was created for that user (cluster.ts).
 */
export async function spawnPostmaster(options: PostmasterOptions): Promise<ChildProcess> {
  const ids = process.getuid?.() === 0 ? await postgresUserIds() : {};
  const child = spawn(options.binary, ["-D", options.dataDir, "-p", String(options.port), ...options.flags], {
    ...ids,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    // The readiness line is matched in English, whatever the environment's locale.
    env: { ...process.env, LC_MESSAGES: "C" },
  });
  await new Promise<void>((resolve, reject) => {
    let seen = "";
    const onData = (chunk: string) => {
      options.onOutput(chunk);
      // Keep a short tail, so the line is found even when split across chunks.
      seen = (seen + chunk).slice(-2 * READY.length);
      if (seen.includes(READY)) settle();
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
      settle(new Error(`PostgreSQL exited before it was ready (code ${code ?? "none"}, signal ${signal ?? "none"})`));
    const settle = (error?: Error) => {
      child.off("exit", onExit);
      child.off("error", settle);
      if (error) reject(error);
      else resolve();
    };
    child.stdout!.setEncoding("utf8").on("data", options.onOutput);
    child.stderr!.setEncoding("utf8").on("data", onData);
    child.once("exit", onExit);
    child.once("error", settle);
  });
  // Signalling a server that already exited emits "error"; the "exit" event already told.
  child.on("error", () => {});
  return child;
}

async function postgresUserIds(): Promise<{ uid: number; gid: number }> {
  try {
    const [uid, gid] = await Promise.all([execFileAsync("id", ["-u", "postgres"]), execFileAsync("id", ["-g", "postgres"])]);
    return { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
  } catch (error) {
    throw new EmbeddedPostgresError("PostgreSQL refuses to run as root, and there is no `postgres` OS user to run it as", { cause: error });
  }
}
