/**
 * The judge: reads a scenario's job tables and side-effect ledger after the
 * run and checks the pass criteria every chaos scenario shares.
 *
 * - Every job is terminal (`succeeded`, `dead`, `cancelled`); no execution is
 *   left open.
 * - At most one succeeded execution per job (exactly one for a succeeded
 *   job), and its side effect is in the ledger, committed while the job still
 *   named that execution.
 * - Ownership never overlaps: each execution of a job was closed (in the
 *   database) before the next one was claimed.
 * - Every repeated side effect is explained by how its execution ended
 *   (lease expiry after a crash, pause or partition; a shutdown hand-back; a
 *   time-out), never by a second live owner.
 * - `attempts` equals the executions that count (all but `retry_after`,
 *   `interrupted` and `suspended`, which give the attempt back).
 * - The CHECK constraints still hold and are still validated; dead jobs have
 *   exactly one dead-letter entry carrying their whole history.
 *
 * Attempts are read through the view job_attempts (the ended ones, and any
 * still running, from its job row), as the API reads them; job_executions
 * itself must hold ended attempts only.
 */

export type Query = <T>(text: string, values?: unknown[]) => Promise<T[]>;

/** How a side effect that did not belong to the succeeded execution came about. */
export type DuplicateClass =
  /** The owner committed its effect, then crashed, froze or lost its lease before completing: the job ran again after the lease expired. */
  | "after_lease_expiry"
  /** A stale owner committed its effect after the job had moved on (a frozen or partitioned worker's late write). */
  | "late_stale_owner"
  /** The worker shut down past its grace period; the job was handed back and ran again. */
  | "after_shutdown_handback"
  /** The attempt timed out (the handler ignored its signal) and the job ran again. */
  | "after_timeout"
  /** The effect was committed, then the job was cancelled (cancel is best effort once a handler runs). */
  | "then_cancelled"
  /** The attempt was recorded as failed after its effect was committed. */
  | "after_failure";

export interface JudgeOptions {
  /** Duplicate classes this scenario's faults can produce; any other is a violation. */
  allowDuplicates?: readonly DuplicateClass[];
}

export interface Verdict {
  jobs: number;
  statuses: Record<string, number>;
  executions: number;
  outcomes: Record<string, number>;
  effects: number;
  /** Effect rows of executions that did not succeed. */
  duplicates: number;
  duplicatesByClass: Partial<Record<DuplicateClass, number>>;
  /** Effect rows committed when the job no longer named their execution. */
  lateEffects: number;
  aborts: Record<string, number>;
  violations: string[];
}

const LIMIT = 10;

export async function judge(q: Query, schema: string, options: JudgeOptions = {}): Promise<Verdict> {
  const s = `"${schema.replace(/"/g, '""')}"`;
  const violations: string[] = [];
  const flag = (what: string, rows: unknown[], total?: number) => {
    if (rows.length > 0) violations.push(`${what}: ${total ?? rows.length} (e.g. ${JSON.stringify(rows.slice(0, LIMIT))})`);
  };

  const statusRows = await q<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM ${s}.jobs GROUP BY status ORDER BY status`);
  const statuses = Object.fromEntries(statusRows.map((r) => [r.status, r.n]));
  const jobs = statusRows.reduce((sum, r) => sum + r.n, 0);
  const outcomeRows = await q<{ outcome: string; n: number }>(
    `SELECT outcome, count(*)::int AS n FROM ${s}.job_attempts GROUP BY outcome ORDER BY outcome`,
  );
  const outcomes = Object.fromEntries(outcomeRows.map((r) => [r.outcome, r.n]));
  const executions = outcomeRows.reduce((sum, r) => sum + r.n, 0);

  // 1. Terminal, and nothing left running (with or without a live lease).
  flag(
    "jobs not in a terminal state",
    await q(
      `SELECT id, status, attempts, lease_expires_at > now() AS lease_live FROM ${s}.jobs
        WHERE status NOT IN ('succeeded', 'dead', 'cancelled') ORDER BY id LIMIT ${LIMIT}`,
    ),
    jobs - (statuses.succeeded ?? 0) - (statuses.dead ?? 0) - (statuses.cancelled ?? 0),
  );
  flag("executions never closed", await q(`SELECT id, job_id, worker_id FROM ${s}.job_attempts WHERE outcome = 'running' LIMIT ${LIMIT}`), outcomes.running);

  // 2. At most one succeeded execution per job; exactly one for a succeeded job.
  flag(
    "jobs whose succeeded executions do not match their status",
    await q(`
      SELECT j.id, j.status, count(e.id) FILTER (WHERE e.outcome = 'succeeded')::int AS wins
        FROM ${s}.jobs AS j LEFT JOIN ${s}.job_attempts AS e ON e.job_id = j.id
       GROUP BY j.id, j.status
      HAVING count(e.id) FILTER (WHERE e.outcome = 'succeeded') > 1
          OR (j.status = 'succeeded') <> (count(e.id) FILTER (WHERE e.outcome = 'succeeded') = 1)
       LIMIT ${LIMIT}`),
  );

  // 3. Ownership intervals of one job never overlap.
  flag(
    "executions of one job whose ownership overlapped",
    await q(`
      SELECT job_id, id, worker_id, finished_at, next_start FROM (
        SELECT e.*, lead(e.started_at) OVER (PARTITION BY e.job_id ORDER BY e.started_at, e.id) AS next_start
          FROM ${s}.job_attempts AS e) AS ordered
       WHERE next_start IS NOT NULL AND (finished_at IS NULL OR finished_at > next_start)
       LIMIT ${LIMIT}`),
  );

  // 4. Attempts count exactly the claims that count (a durable sleep or wait, `suspended`, gives its attempt back).
  flag(
    "jobs whose attempts differ from their counted executions",
    await q(`
      SELECT j.id, j.status, j.attempts,
             count(e.id) FILTER (WHERE e.outcome NOT IN ('retry_after', 'interrupted', 'suspended'))::int AS counted,
             array_agg(e.outcome ORDER BY e.started_at) FILTER (WHERE e.id IS NOT NULL) AS history
        FROM ${s}.jobs AS j LEFT JOIN ${s}.job_attempts AS e ON e.job_id = j.id
       GROUP BY j.id, j.status, j.attempts
      HAVING j.attempts <> count(e.id) FILTER (WHERE e.outcome NOT IN ('retry_after', 'interrupted', 'suspended'))
       LIMIT ${LIMIT}`),
  );

  // 5. The winning side effect happened, once, by the live owner.
  flag(
    "succeeded executions without their side effect committed by the live owner",
    await q(`
      SELECT e.job_id, e.id AS execution_id,
             (SELECT count(*)::int FROM ${s}.chaos_ledger AS l WHERE l.execution_id = e.id AND l.event = 'effect') AS effects
        FROM ${s}.job_attempts AS e
       WHERE e.outcome = 'succeeded'
         AND (SELECT count(*) FROM ${s}.chaos_ledger AS l WHERE l.execution_id = e.id AND l.event = 'effect' AND l.owner_current) <> 1
       LIMIT ${LIMIT}`),
  );
  flag(
    "executions with more than one side effect",
    await q(`
      SELECT execution_id, count(*)::int AS n FROM ${s}.chaos_ledger WHERE event = 'effect'
       GROUP BY execution_id HAVING count(*) > 1 LIMIT ${LIMIT}`),
  );
  flag(
    "side effects by executions the database never recorded",
    await q(`
      SELECT l.job_id, l.execution_id FROM ${s}.chaos_ledger AS l
       WHERE l.event = 'effect'
         -- The attempts of job_attempts, each by its key: an ended one's row, or the job row that holds a
         -- running or succeeded attempt (a scan of the view per effect would read all history each time).
         AND NOT EXISTS (SELECT 1 FROM ${s}.job_executions AS e WHERE e.id = l.execution_id AND e.job_id = l.job_id)
         AND NOT EXISTS (SELECT 1 FROM ${s}.jobs AS j WHERE j.id = l.job_id AND j.current_execution_id = l.execution_id)
       LIMIT ${LIMIT}`),
  );

  // 6. Every repeated side effect explained by how its execution ended.
  const extra = await q<{ job_id: string; execution_id: string; outcome: string; owner_current: boolean; worker: string }>(`
    SELECT l.job_id, l.execution_id, e.outcome, l.owner_current, l.worker
      FROM ${s}.chaos_ledger AS l JOIN ${s}.job_attempts AS e ON e.id = l.execution_id
     WHERE l.event = 'effect' AND e.outcome <> 'succeeded'`);
  const duplicatesByClass: Partial<Record<DuplicateClass, number>> = {};
  const unexplained: unknown[] = [];
  for (const row of extra) {
    const kind = classify(row.outcome, row.owner_current);
    if (kind === null) {
      unexplained.push(row);
      continue;
    }
    duplicatesByClass[kind] = (duplicatesByClass[kind] ?? 0) + 1;
    if (options.allowDuplicates && !options.allowDuplicates.includes(kind)) unexplained.push({ ...row, class: kind });
  }
  flag("repeated side effects this scenario cannot explain", unexplained);
  const [late] = await q<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.chaos_ledger WHERE event = 'effect' AND NOT owner_current`);
  const [effectCount] = await q<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.chaos_ledger WHERE event = 'effect'`);
  const abortRows = await q<{ reason: string; n: number }>(
    `SELECT coalesce(reason, '?') AS reason, count(*)::int AS n FROM ${s}.chaos_ledger WHERE event = 'abort' GROUP BY reason`,
  );

  // 7. The invariants the CHECK constraints enforce, re-verified, and the constraints still in force.
  flag(
    "jobs breaking a row invariant",
    await q(`
      SELECT id, status, attempts, max_attempts FROM ${s}.jobs
       WHERE status NOT IN ('queued', 'running', 'retrying', 'sleeping', 'succeeded', 'cancelled', 'dead')
          OR attempts < 0 OR attempts > max_attempts OR max_attempts < 1
          OR (status = 'running') <> (locked_by IS NOT NULL AND current_execution_id IS NOT NULL AND lease_expires_at IS NOT NULL)
          -- A succeeded job keeps its last attempt's execution id and worker (both or neither), never a lease.
          OR (status NOT IN ('running', 'succeeded') AND (locked_by IS NOT NULL OR current_execution_id IS NOT NULL OR lease_expires_at IS NOT NULL))
          OR (status = 'succeeded' AND (lease_expires_at IS NOT NULL OR (locked_by IS NULL) <> (current_execution_id IS NULL)))
          OR (status IN ('succeeded', 'cancelled', 'dead')) <> (finished_at IS NOT NULL)
       LIMIT ${LIMIT}`),
  );
  flag(
    "executions breaking a row invariant",
    await q(`SELECT id, outcome, finished_at FROM ${s}.job_attempts WHERE outcome = 'running' OR finished_at IS NULL OR attempt < 1 LIMIT ${LIMIT}`),
  );
  const [constraints] = await q<{ n: number }>(
    // A constraint added NOT VALID (jobs_running_owned, migration 031) is enforced on every write all the same.
    `SELECT count(*)::int AS n FROM pg_constraint WHERE conrelid = '${s}.jobs'::regclass AND contype = 'c'`,
  );
  if ((constraints?.n ?? 0) < 7) violations.push(`jobs has ${constraints?.n} CHECK constraints, expected at least 7`);

  // 8. Dead jobs: each its own dead letter (an id and a reason on its row),
  // and no other job carries one; the history a letter shows is its attempts.
  flag(
    "dead letters out of step with dead jobs",
    await q(`
      SELECT j.id, j.status, j.dead_letter_id AS letter, j.dead_reason AS reason
        FROM ${s}.jobs AS j
       WHERE (j.status = 'dead') <> (j.dead_letter_id IS NOT NULL) OR (j.dead_letter_id IS NULL) <> (j.dead_reason IS NULL)
       LIMIT ${LIMIT}`),
  );

  return {
    jobs,
    statuses,
    executions,
    outcomes,
    effects: effectCount?.n ?? 0,
    duplicates: extra.length,
    duplicatesByClass,
    lateEffects: late?.n ?? 0,
    aborts: Object.fromEntries(abortRows.map((r) => [r.reason, r.n])),
    violations,
  };
}

function classify(outcome: string, ownerCurrent: boolean): DuplicateClass | null {
  switch (outcome) {
    case "lease_expired":
      return ownerCurrent ? "after_lease_expiry" : "late_stale_owner";
    case "interrupted":
      return "after_shutdown_handback";
    case "timeout":
      return "after_timeout";
    case "cancelled":
      return "then_cancelled";
    case "failed":
      return "after_failure";
    default:
      return null; // 'running' (never closed) or 'succeeded' twice: no explanation
  }
}

/** "37 duplicates (30 after lease expiry, 7 late writes by a stale owner)". */
export function describeDuplicates(verdict: Verdict): string {
  if (verdict.duplicates === 0) return "0 duplicates";
  const words: Record<DuplicateClass, string> = {
    after_lease_expiry: "re-run after lease expiry",
    late_stale_owner: "late writes by a stale owner, fenced",
    after_shutdown_handback: "re-run after a shutdown hand-back",
    after_timeout: "re-run after a time-out",
    then_cancelled: "then cancelled",
    after_failure: "recorded as failed",
  };
  const parts = Object.entries(verdict.duplicatesByClass).map(([kind, n]) => `${n} ${words[kind as DuplicateClass]}`);
  return `${verdict.duplicates} duplicate side effects (${parts.join(", ")})`;
}
