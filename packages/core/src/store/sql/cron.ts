// Cron schedules (table cron_schedules). The worker's scheduler holds a due row with
// FOR UPDATE SKIP LOCKED, enqueues its ticks with `jobInsertMany` on the same
// connection, and advances the row with `cronScheduleAdvance`, all in one
// transaction: two workers never enqueue the same tick.

const CRON_COLUMNS = `name, kind, cron, timezone, tenant, queue, priority, payload, missed_policy, catch_up_limit,
  next_tick_at, last_tick_at, created_at, updated_at`;

/** The database clock, which every tick decision uses (worker clocks may disagree). No parameters. */
export const cronNow = `SELECT now() AS db_now`;

/**
 * Create a schedule, or bring its definition up to date. `next_tick_at` is
 * replaced only when the cron expression or time zone changed (or the row is
 * new), so ticks missed while no worker ran are still found after a restart;
 * a changed expression starts from its next tick after now. The row is not
 * written at all when nothing changed.
 * $1 name, $2 kind, $3 cron, $4 timezone, $5 tenant, $6 queue, $7 priority, $8 payload (json text),
 * $9 missed_policy, $10 catch_up_limit, $11 next_tick_at for a new or changed expression (timestamptz|null)
 */
export const cronScheduleUpsert = `
INSERT INTO {{schema}}.cron_schedules AS s
  (name, kind, cron, timezone, tenant, queue, priority, payload, missed_policy, catch_up_limit, next_tick_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, $11)
ON CONFLICT (name) DO UPDATE SET
  kind = EXCLUDED.kind, cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, tenant = EXCLUDED.tenant,
  queue = EXCLUDED.queue, priority = EXCLUDED.priority, payload = EXCLUDED.payload,
  missed_policy = EXCLUDED.missed_policy, catch_up_limit = EXCLUDED.catch_up_limit,
  next_tick_at = CASE WHEN (s.cron, s.timezone) IS DISTINCT FROM (EXCLUDED.cron, EXCLUDED.timezone)
                      THEN EXCLUDED.next_tick_at ELSE s.next_tick_at END,
  updated_at = now()
WHERE (s.kind, s.cron, s.timezone, s.tenant, s.queue, s.priority, s.payload, s.missed_policy, s.catch_up_limit)
  IS DISTINCT FROM (EXCLUDED.kind, EXCLUDED.cron, EXCLUDED.timezone, EXCLUDED.tenant, EXCLUDED.queue,
                    EXCLUDED.priority, EXCLUDED.payload, EXCLUDED.missed_policy, EXCLUDED.catch_up_limit)`;

/**
 * Hold the due schedules among these names and kinds (inside a transaction).
 * SKIP LOCKED: a schedule another worker is handling right now is left to it;
 * when that worker commits, its next_tick_at is past now and no longer due.
 * $1 names text[], $2 kinds text[]
 */
export const cronScheduleLockDue = `
SELECT now() AS db_now, ${CRON_COLUMNS}
FROM {{schema}}.cron_schedules
WHERE name = ANY($1::text[]) AND kind = ANY($2::text[]) AND next_tick_at <= now()
ORDER BY name
FOR UPDATE SKIP LOCKED`;

/**
 * Move a schedule past the ticks just enqueued, only if nobody moved it since
 * it was read (the second guard beside the row lock).
 * $1 name, $2 next_tick_at as read, $3 new next_tick_at|null, $4 newest tick enqueued|null (keeps the old one)
 */
export const cronScheduleAdvance = `
UPDATE {{schema}}.cron_schedules
SET next_tick_at = $3, last_tick_at = coalesce($4, last_tick_at)
WHERE name = $1 AND next_tick_at IS NOT DISTINCT FROM $2
RETURNING name`;

/** When the soonest of these schedules is next due, by the database clock. $1 names text[], $2 kinds text[] */
export const cronScheduleNextDue = `
SELECT now() AS db_now, min(next_tick_at) AS next_tick_at
FROM {{schema}}.cron_schedules
WHERE name = ANY($1::text[]) AND kind = ANY($2::text[])`;

/** Every schedule, by name. $1 tenant|null (null: every tenant) */
export const cronScheduleList = `
SELECT now() AS db_now, ${CRON_COLUMNS}
FROM {{schema}}.cron_schedules
WHERE ($1::text IS NULL OR tenant = $1)
ORDER BY name`;
