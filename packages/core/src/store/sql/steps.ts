import { OPEN_WAIT, RECORD, recordMoves, STATE } from "./status-sets.js";
import { TRANSITIONS } from "../../core/transitions.js";
import { attemptRecord } from "./attempt-fragments.js";
import { JOB_COLUMNS, jobColumnsOf } from "./job-columns.js";
import { type JobWrites, moveLiveJobs, returnEndedJobs, setList } from "./job-moves.js";
import { recordRequeues } from "./requeue-fragments.js";
import { cancelAtEnd, outcomeOf, statusWrites } from "./status-writes.js";

// Durable execution (worker/durable-run.ts): a handler's steps, sleeps and
// waits for events, recorded in job_steps, and the events sent to them.
//
// Fencing: every write about a running job's steps first locks its job row
// matched on the current execution id (FOR SHARE for a record, FOR UPDATE
// for a suspension, which moves the job). A worker that lost its lease
// matches no row and records nothing. A reclaim that locked the row first
// changes the execution id, and the re-read under the lock then matches
// nothing; a reclaim that comes second waits for this statement (or the
// transactional step's COMMIT) and finds the attempt's records already
// written by the owner it is about to replace.
//
// Events and waits meet under one advisory lock per (tenant, event, key),
// taken first by both sides (StepStore.sendEvent and StepStore.suspend for a
// wait), each then reading in a statement of its own: the wait sees every
// event committed before it, and the event sees every wait committed before
// it, so an event that races a wait is never lost.

/** The running attempt's job row, matched on its execution id and share-locked: the fence of a record. */
const OWNER = `owner AS (
  SELECT id, tenant, attempts FROM {{schema}}.jobs
  WHERE id = $1 AND current_execution_id = $2 AND status = ${STATE.running}
  FOR SHARE
)`;

/**
 * Every record of job $1, with how far each sleep's wake time or wait's
 * deadline is from now (database clock), so the worker can tell when it is
 * due without comparing clocks.
 * $1 job id
 */
export const jobStepsLoad = `
SELECT name, kind, state, result, wake_at,
       (extract(epoch FROM wake_at - now()) * 1000)::float8 AS wake_in_ms
FROM {{schema}}.job_steps WHERE job_id = $1`;

/**
 * Record a step's end for the running attempt: `completed` with its result
 * (`returned`), or `failed` with its error (`threw`: kept for display, and
 * replaced by a later run's record). A record is replaced only in a state
 * the new one's event moves: a completed record never is. Returns the
 * stored record, whose result is what every later run of the job replays;
 * no row when fenced.
 * $1 job id, $2 execution id, $3 name, $4 state (RECORD_TRANSITIONS.step's returned or threw), $5 result (json text|null),
 * $6 error (json text|null), $7 how long the step ran, ms
 */
export const jobStepRecord = `
WITH ${OWNER}
INSERT INTO {{schema}}.job_steps AS s
  (job_id, name, kind, state, result, error, attempt, execution_id, started_at, finished_at, tenant)
SELECT o.id, $3, 'step', $4, $5::jsonb, $6::jsonb, o.attempts, $2,
       now() - $7::float8 * interval '1 millisecond', now(), o.tenant
FROM owner AS o
ON CONFLICT (job_id, name) DO UPDATE SET
  state = excluded.state, result = excluded.result, error = excluded.error, attempt = excluded.attempt,
  execution_id = excluded.execution_id, started_at = excluded.started_at, finished_at = excluded.finished_at
  WHERE s.kind = 'step' AND (s.state, excluded.state) IN (${recordMoves("step", ["returned", "threw"])})
RETURNING s.result, s.state`;

/**
 * A wait of the running attempt receives an event already sent
 * (`event_received`): record the wait as `received` with the event's
 * payload. No row when fenced.
 * $1 job id, $2 execution id, $3 name, $4 event id, $5 event name, $6 event key
 */
export const jobWaitReceive = `
WITH ${OWNER}, ev AS (SELECT id, payload FROM {{schema}}.events WHERE id = $4)
INSERT INTO {{schema}}.job_steps AS s
  (job_id, name, kind, state, result, attempt, execution_id, started_at, finished_at, tenant, event, event_key, event_id)
SELECT o.id, $3, 'wait', ${RECORD.wait.event_received.to}, ev.payload, o.attempts, $2, now(), now(), o.tenant, $5, $6, ev.id
FROM owner AS o, ev
ON CONFLICT (job_id, name) DO UPDATE SET
  state = ${RECORD.wait.event_received.to}, result = excluded.result, event_id = excluded.event_id, finished_at = now()
  WHERE s.kind = 'wait' AND s.state IN (${RECORD.wait.event_received.from})
RETURNING s.result`;

/**
 * The first event job $1 may receive: named $2 with key $3 in the job's
 * tenant, sent at or after the job was created, and not received by
 * another wait of the job. Read under the advisory lock (see the header).
 * $1 job id, $2 event name, $3 event key
 */
export const eventMatch = `
SELECT e.id FROM {{schema}}.events AS e
JOIN {{schema}}.jobs AS j ON j.id = $1
WHERE e.tenant = j.tenant AND e.name = $2 AND e.event_key = $3 AND e.created_at >= j.created_at
  AND NOT EXISTS (SELECT 1 FROM {{schema}}.job_steps AS s WHERE s.job_id = $1 AND s.event_id = e.id)
ORDER BY e.created_at, e.id
LIMIT 1`;

/**
 * The advisory lock under which events and waits of one (tenant, event, key) meet; held to COMMIT.
 * $1 tenant, $2 event name, $3 event key
 */
export const eventLock = `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2 || chr(31) || $3, 7302))`;

/**
 * Suspend the running attempt on a sleep or a wait: record it (unless a
 * record of that name exists: a job that slept before and woke early
 * sleeps to the same time), end the attempt `suspended`, given back, and
 * move the job to `sleeping` until `run_at`: the recorded wake time, else
 * $6, else now plus $7 ms. With a cancel requested the job ends
 * `cancelled` instead, the attempt counted (withCancelRequest). Returns the
 * job; no row when fenced.
 * $1 job id, $2 execution id, $3 name, $4 kind ('sleep'|'wait'), $5 worker id,
 * $6 wake time|null, $7 ms from now|null, $8 event|null, $9 event key|null
 */
/** A suspension's event: `attempt_suspended`, or `cancel_observed` with a cancel requested (cancelAtEnd). */
const SUSPEND = { expr: "t.event", events: ["attempt_suspended", "cancel_observed"] } as const;

export const jobSuspend = `
WITH target AS (
  SELECT j.id, j.current_execution_id AS execution_id, j.attempts AS attempt, j.started_at, j.cancel_requested, j.tenant,
         ${cancelAtEnd("'attempt_suspended'", "j.cancel_requested")} AS event,
         coalesce((SELECT s.wake_at FROM {{schema}}.job_steps AS s WHERE s.job_id = $1 AND s.name = $3),
                  $6::timestamptz, now() + $7::float8 * interval '1 millisecond') AS wake_at
  FROM {{schema}}.jobs AS j
  WHERE j.id = $1 AND j.current_execution_id = $2 AND j.status = ${STATE.running}
  FOR UPDATE
), step AS (
  INSERT INTO {{schema}}.job_steps (job_id, name, kind, state, attempt, execution_id, started_at, wake_at, tenant, event, event_key)
  SELECT t.id, $3, $4, CASE $4 WHEN 'sleep' THEN ${RECORD.sleep.slept.to} ELSE ${RECORD.wait.wait_opened.to} END, t.attempt, $2, now(), t.wake_at, t.tenant, $8, $9
  FROM target AS t WHERE NOT t.cancel_requested
  ON CONFLICT (job_id, name) DO NOTHING
)${moveLiveJobs(
  { name: "suspend", from: "target", alias: "t", where: `j.id = t.id AND j.status = ${STATE.running}` },
  statusWrites(SUSPEND, { wakeAt: "t.wake_at", error: "NULL::jsonb" }),
)}, ${attemptRecord(`SELECT t.execution_id, t.id, t.attempt, $5::text, t.started_at, now(), ${outcomeOf(SUSPEND, "NULL")}, NULL::jsonb FROM target AS t`)}
SELECT ${JOB_COLUMNS} FROM suspend_moved`;

/**
 * A wait of the running attempt reached its deadline with no event
 * (`deadline_passed`): record it `timed_out`. No row when fenced, or when an event was delivered first
 * (the caller then reads the record).
 * $1 job id, $2 execution id, $3 name
 */
export const jobWaitTimeout = `
WITH ${OWNER}
UPDATE {{schema}}.job_steps AS s SET state = ${RECORD.wait.deadline_passed.to}, finished_at = now()
FROM owner AS o
WHERE s.job_id = $1 AND s.name = $3 AND s.kind = 'wait' AND s.state IN (${RECORD.wait.deadline_passed.from})
RETURNING s.state`;

/**
 * Store an event and deliver it to every open wait it matches whose job
 * sleeps on it: each such wait records it as `received` (`event_received`)
 * and its job is queued now (`wake`). Run under eventLock. Jobs are locked in id order, before
 * their wait rows, as jobSuspend locks them.
 * $1 tenant, $2 event name, $3 event key, $4 payload (json text|null)
 */
export const eventSend = `
WITH ev AS (
  INSERT INTO {{schema}}.events (id, tenant, name, event_key, payload)
  VALUES ({{schema}}.uuid_v7(), $1, $2, $3, $4::jsonb)
  RETURNING id, payload
), sleepers AS (
  SELECT j.id FROM {{schema}}.jobs AS j
  WHERE j.status = ${STATE.sleeping} AND j.id = ANY(ARRAY(
    SELECT s.job_id FROM {{schema}}.job_steps AS s
    WHERE s.tenant = $1 AND s.event = $2 AND s.event_key = $3 AND s.state IN (${OPEN_WAIT})))
  ORDER BY j.id
  FOR UPDATE OF j
), delivered AS (
  UPDATE {{schema}}.job_steps AS s SET state = ${RECORD.wait.event_received.to}, event_id = ev.id, result = ev.payload, finished_at = now()
  FROM ev
  WHERE s.job_id = ANY(ARRAY(SELECT id FROM sleepers)) AND s.event = $2 AND s.event_key = $3 AND s.state IN (${OPEN_WAIT})
  RETURNING s.job_id
), woken AS (
  UPDATE {{schema}}.jobs AS j SET ${setList(statusWrites("wake"))}
  WHERE j.id = ANY(ARRAY(SELECT job_id FROM delivered))
  RETURNING j.id
)
SELECT (SELECT id FROM ev) AS id, ARRAY(SELECT id FROM woken ORDER BY id) AS job_ids`;

/**
 * Queue sleeping jobs whose time has come (`wake`), at most $1, and mark
 * their due sleeps `awake` (`woke`). Concurrent wakers skip each other's rows.
 * $1 limit
 */
export const jobWakeSleeping = `
WITH due AS (
  SELECT id FROM {{schema}}.jobs
  WHERE status = ${STATE.sleeping} AND run_at <= now()
  ORDER BY run_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
), woken AS (
  UPDATE {{schema}}.jobs AS j SET ${setList(statusWrites("wake"))}
  FROM due WHERE j.id = due.id AND j.status = ${STATE.sleeping}
  RETURNING j.id, j.kind
), slept AS (
  UPDATE {{schema}}.job_steps AS s SET state = ${RECORD.sleep.woke.to}, finished_at = now()
  WHERE s.job_id = ANY(ARRAY(SELECT id FROM woken)) AND s.kind = 'sleep' AND s.state IN (${RECORD.sleep.woke.from}) AND s.wake_at <= now()
)
SELECT id, kind FROM woken`;

/** A rerun from a step (`rerun_from_step`): queued now, with fresh attempts and no error. */
const RERUN_WRITES: JobWrites = statusWrites("rerun_from_step");

/**
 * Rerun job $1 from its step named $2: delete that record and every later
 * one (none when $2 is null: a resume, which keeps every record), and queue the job now with fresh attempts (`rerun_from_step`); a
 * dead job leaves the dead-letter queue and its dependency counts, as a
 * requeue does. Returns the job's state before, whether the step was
 * found, how many records were forgotten, and the job as moved (its
 * columns null when it has no such step or is in a state the rerun does
 * not apply in: then nothing changed); no row when there is no such job.
 * The move is recorded for the job's timeline (job_requeues) as $4.
 * $1 job id, $2 step name|null, $3 tenant|null, $4 action (core/requeues.ts: resume, or rerun with $2)
 */
export const jobRerunFromStep = `
WITH target AS (
  SELECT j.id, j.status FROM {{schema}}.jobs AS j
  WHERE j.id = $1 AND ($3::text IS NULL OR j.tenant = $3)
  FOR UPDATE
), start AS (
  SELECT seq FROM (SELECT coalesce((SELECT s.seq FROM {{schema}}.job_steps AS s WHERE s.job_id = $1 AND s.name = $2),
                                   CASE WHEN $2::text IS NULL THEN 9223372036854775807 END) AS seq) AS x
  WHERE seq IS NOT NULL
), allowed AS (
  SELECT t.id, t.status FROM target AS t
  WHERE t.status IN (${Object.keys(TRANSITIONS.rerun_from_step)
    .map((status) => `'${status}'`)
    .join(", ")}) AND EXISTS (SELECT 1 FROM start)
), forgotten AS (
  DELETE FROM {{schema}}.job_steps AS s
  WHERE s.job_id = ANY(ARRAY(SELECT id FROM allowed)) AND s.seq >= (SELECT seq FROM start)
  RETURNING s.name
), released AS (
  DELETE FROM {{schema}}.job_dependency_state WHERE job_id = ANY(ARRAY(SELECT id FROM allowed WHERE status = ${STATE.dead}))
)${moveLiveJobs({ name: "rerun", from: "allowed", alias: "a", where: `j.id = a.id AND a.status <> ${STATE.dead}` }, RERUN_WRITES)}${returnEndedJobs(
  { name: "rerun_dead", from: "allowed", alias: "a", where: "j.id = a.id", only: `a.status = ${STATE.dead}` },
  RERUN_WRITES,
  ["jobs_dead"],
)}${recordRequeues("rerun_recorded", "(SELECT id FROM rerun_moved UNION ALL SELECT id FROM rerun_dead_moved)", { action: "$4::text", fromStep: "$2::text" })}
SELECT t.status AS previous_status, EXISTS (SELECT 1 FROM start) AS step_found,
       (SELECT count(*) FROM forgotten)::int AS forgotten, m.*
FROM target AS t LEFT JOIN (SELECT * FROM rerun_moved UNION ALL SELECT * FROM rerun_dead_moved) AS m ON true`;

/**
 * The records of job $1 for display, in the order they were first made.
 * $1 job id, $2 tenant|null
 */
export const jobStepsList = `
SELECT s.name, row_number() OVER (ORDER BY s.seq)::int AS seq, s.kind, s.state, s.result, s.error, s.attempt, s.execution_id, s.started_at, s.finished_at,
       s.wake_at, s.event, s.event_key, s.event_id
FROM {{schema}}.job_steps AS s
JOIN {{schema}}.jobs AS j ON j.id = s.job_id
WHERE s.job_id = $1 AND ($2::text IS NULL OR j.tenant = $2)
ORDER BY s.seq`;

/**
 * Waits for an event still open, all tenants, counted up to $1 through
 * job_steps_open_waits_idx (a metrics gauge): never more than $1 rows read.
 * $1 limit
 */
export const waitsOpenCount = `
SELECT count(*)::int AS n FROM (SELECT 1 FROM {{schema}}.job_steps WHERE state IN (${OPEN_WAIT}) LIMIT $1) AS open`;
