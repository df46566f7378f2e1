// Queue and tenant settings: pause, limits, caps. Changes that can let more
// jobs start notify the jobs channel, so idle workers claim at once instead
// of at their next poll. Settings rows are upserted: a queue or tenant needs
// no row until someone sets something on it.

const QUEUE_SETTINGS_COLUMNS = `name, paused, concurrency_limit, rate_limit, rate_interval_ms, window_started_at, window_count, updated_at`;

/**
 * Pause or resume a queue. Resuming wakes workers (NOTIFY with the queue's name).
 * $1 queue, $2 paused boolean, $3 notification channel
 */
export const queueSettingsSetPaused = `
WITH saved AS (
  INSERT INTO {{schema}}.queue_settings (name, paused) VALUES ($1, $2)
  ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()
  RETURNING ${QUEUE_SETTINGS_COLUMNS}
)
SELECT ${QUEUE_SETTINGS_COLUMNS}, CASE WHEN NOT paused THEN pg_notify($3, name)::text END AS notified FROM saved`;

/**
 * Set a queue's limits; a field whose "set" flag is false keeps its value,
 * null clears it. Changing the rate limit starts a fresh window. Wakes workers.
 * $1 queue, $2 set concurrency boolean, $3 concurrency|null, $4 set rate boolean, $5 rate count|null,
 * $6 rate interval ms|null, $7 notification channel
 */
export const queueSettingsSetLimits = `
WITH saved AS (
  INSERT INTO {{schema}}.queue_settings (name, concurrency_limit, rate_limit, rate_interval_ms)
  VALUES ($1, CASE WHEN $2::boolean THEN $3::int END, CASE WHEN $4::boolean THEN $5::int END, CASE WHEN $4::boolean THEN $6::int END)
  ON CONFLICT (name) DO UPDATE SET
    concurrency_limit = CASE WHEN $2::boolean THEN $3::int ELSE {{schema}}.queue_settings.concurrency_limit END,
    rate_limit = CASE WHEN $4::boolean THEN $5::int ELSE {{schema}}.queue_settings.rate_limit END,
    rate_interval_ms = CASE WHEN $4::boolean THEN $6::int ELSE {{schema}}.queue_settings.rate_interval_ms END,
    window_started_at = CASE WHEN $4::boolean THEN NULL ELSE {{schema}}.queue_settings.window_started_at END,
    window_count = CASE WHEN $4::boolean THEN 0 ELSE {{schema}}.queue_settings.window_count END,
    updated_at = now()
  RETURNING ${QUEUE_SETTINGS_COLUMNS}
)
SELECT ${QUEUE_SETTINGS_COLUMNS}, pg_notify($7, name)::text AS notified FROM saved`;

/**
 * Delete a queue's settings row: the queue is resumed and its limits lifted;
 * its jobs are untouched. Wakes workers (NOTIFY with the queue's name). No
 * row returned when the queue had no settings.
 * $1 queue, $2 notification channel
 */
export const queueSettingsDelete = `
WITH deleted AS (DELETE FROM {{schema}}.queue_settings WHERE name = $1 RETURNING name)
SELECT name, pg_notify($2, name)::text AS notified FROM deleted`;

/** Every queue that has settings. No parameters. */
export const queueSettingsList = `
SELECT ${QUEUE_SETTINGS_COLUMNS} FROM {{schema}}.queue_settings ORDER BY name`;

/**
 * Set (or clear, with null) a tenant's concurrency cap. Wakes every worker (NOTIFY "*").
 * $1 tenant, $2 concurrency|null, $3 notification channel
 */
export const tenantSettingsSetLimits = `
WITH saved AS (
  INSERT INTO {{schema}}.tenant_settings (tenant, concurrency_limit) VALUES ($1, $2)
  ON CONFLICT (tenant) DO UPDATE SET concurrency_limit = EXCLUDED.concurrency_limit, updated_at = now()
  RETURNING tenant, concurrency_limit, updated_at
)
SELECT tenant, concurrency_limit, updated_at, pg_notify($3, '*')::text AS notified FROM saved`;

/** Every tenant that has settings. No parameters. */
export const tenantSettingsList = `
SELECT tenant, concurrency_limit, updated_at FROM {{schema}}.tenant_settings ORDER BY tenant`;
