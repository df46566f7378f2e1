/**
 * Scenario: a library `enqueueMany` of 200,000 jobs (the COPY path, used
 * from COPY_MIN_ROWS jobs up) loses its connection while the rows stream
 * in: (a) its backend is terminated from another connection, (b) PostgreSQL
 * restarts, fast and immediate, on a server of the test's own. The call
 * runs in a child process (test/helpers/copy-enqueue-child.mjs), so a crash
 * shows as the child dying. Asserts: the call rejects with a typed
 * `DatabaseError` (code DATABASE), the child exits 0 with no "Unhandled
 * 'error' event" on stderr, and the batch left zero rows (all or nothing).
 *
 * Why (issue 29): COPY runs on a client checked out of the pool, which had
 * no 'error' listener while out. pg emits 'error' on a client whose
 * connection ends, so losing the connection mid-COPY ended the caller's
 * whole process, whatever its own try/catch around the call said. The
 * client is now checked out with a listener and discarded on release.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { JsonLinesProcess, REPO_ROOT, requireBuild } from "../helpers/child-process.js";
import { waitForProcessGone } from "../helpers/processes.js";
import type { StopMode } from "./dedicated-postgres.js";
import { type ChaosRun, chaosFile, onDedicatedServer } from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

const JOBS = 200_000;
/** The fault waits for the call's COPY statement number this (or later). */
const STATEMENTS_IN = 4;
const CHILD = `${REPO_ROOT}/test/helpers/copy-enqueue-child.mjs`;

const file = chaosFile();

interface Settled {
  event: "resolved" | "rejected";
  ms: number;
  name?: string;
  className?: string;
  code?: string | null;
  databaseError?: boolean;
  message?: string;
}

interface CopyUnderFault {
  settled: Settled;
  exit: { code: number | null; signal: NodeJS.Signals | null };
  stderr: string;
  /** Rows the COPY statement had taken when the fault hit (pg_stat_progress_copy). */
  rowsBefore: number;
  /** COPY statements of the call seen, the one hit included. */
  statements: number;
}

/**
 * Start the child's enqueueMany on `r`'s schema, wait until its COPY is
 * streaming (found by its own application_name and `query ILIKE 'COPY%'`),
 * run `fault` on its backend's pid, and collect how the child settled.
 */
async function copyUnderFault(r: ChaosRun, fault: (pid: number) => Promise<void>): Promise<CopyUnderFault> {
  requireBuild("src/index.js");
  const application = `copy-child-${randomBytes(3).toString("hex")}`;
  const url = new URL(r.databaseUrl);
  url.searchParams.set("application_name", application);
  const child = new JsonLinesProcess(CHILD, [url.toString(), r.schema, String(JOBS)], { ...process.env, NODE_OPTIONS: "" });
  try {
    await child.next(30_000); // "enqueuing"
    // Deep in the stream: a few COPY statements (of up to ENQUEUE_CHUNK_ROWS rows each) in, rows flowing.
    const statements = new Set<string>();
    const copying = await waitFor(
      `the child's COPY to be ${STATEMENTS_IN} statements in`,
      async () => {
        const [row] = await r.q<{ pid: number; rows: number; began: string }>(
          `SELECT a.pid, coalesce(p.tuples_processed, 0)::int AS rows, a.query_start::text AS began
             FROM pg_stat_activity AS a LEFT JOIN pg_stat_progress_copy AS p ON p.pid = a.pid
            WHERE a.application_name = $1 AND a.state = 'active' AND a.query ILIKE 'COPY%'`,
          [application],
        );
        if (row) statements.add(row.began);
        return row && row.rows > 0 && statements.size >= STATEMENTS_IN ? row : null;
      },
      60_000,
      5,
    );
    await fault(copying.pid);
    const settled = await child.next<Settled>(60_000);
    const exit = await Promise.race([
      child.exited,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`child ${child.pid} still running 30 s after it settled`)), 30_000)),
    ]);
    return { settled, exit, stderr: child.stderrText, rowsBefore: copying.rows, statements: statements.size };
  } finally {
    if (child.child.exitCode === null && child.child.signalCode === null) {
      child.child.kill("SIGKILL");
      await waitForProcessGone(child.pid, 10_000);
    }
  }
}

function expectTypedRejection(outcome: CopyUnderFault): void {
  expect(outcome.stderr).not.toMatch(/Unhandled 'error' event/);
  expect(outcome.exit, `the child crashed; stderr:\n${outcome.stderr}`).toEqual({ code: 0, signal: null });
  expect(outcome.settled).toMatchObject({ event: "rejected", className: "DatabaseError", code: "DATABASE", databaseError: true });
}

async function jobRows(r: ChaosRun): Promise<number> {
  const [row] = await r.q<{ n: number }>(`SELECT count(*)::int AS n FROM ${r.s}.jobs`);
  return row!.n;
}

describe("chaos: an enqueueMany by COPY loses its connection", () => {
  it(`rejects with a DatabaseError, writes nothing and crashes nothing when its backend is terminated (${JOBS} jobs)`, async () => {
    const r = await file.start("copy-terminate");
    try {
      const outcome = await copyUnderFault(r, async (pid) => {
        const [row] = await r.q<{ done: boolean }>("SELECT pg_terminate_backend($1) AS done", [pid]);
        expect(row!.done).toBe(true);
      });
      console.log(
        `[chaos] copy-terminate: backend terminated in COPY statement ${outcome.statements} at row ${outcome.rowsBefore}; ` +
          `${outcome.settled.event} after ${outcome.settled.ms} ms: ${outcome.settled.className}: ${outcome.settled.message}`,
      );
      expectTypedRejection(outcome);
      expect(await jobRows(r), "rows the rejected batch left").toBe(0);
    } finally {
      await r.cleanup();
    }
  }, 120_000);

  it(`rejects with a DatabaseError, writes nothing and crashes nothing when PostgreSQL restarts mid-COPY (fast, immediate)`, async () => {
    await onDedicatedServer("copy-restart", async (run, server) => {
    for (const mode of ["fast", "immediate"] as StopMode[]) {
      const outcome = await copyUnderFault(run, () => server.restartAfter(mode, 1_000));
      console.log(
        `[chaos] copy-restart (${mode}): server stopped in COPY statement ${outcome.statements} at row ${outcome.rowsBefore}; ` +
          `${outcome.settled.event} after ${outcome.settled.ms} ms: ${outcome.settled.className}: ${outcome.settled.message}`,
      );
      expectTypedRejection(outcome);
      const rows = await waitFor("the restarted server to answer", () => jobRows(run).then((n) => ({ n })), 30_000, 200);
      expect(rows.n, "rows the rejected batch left").toBe(0);
    }
    });
  }, 180_000);
});
