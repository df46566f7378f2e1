-- Cron schedules: one row per schedule, shared by every worker. A worker
-- enqueues a schedule's due ticks and moves next_tick_at past them in one
-- transaction, holding the row (FOR UPDATE SKIP LOCKED) and updating it only
-- if next_tick_at is still what it read: so each tick is enqueued once
-- however many workers run, with no leader. Tick jobs also carry the
-- idempotency key `cron:<name>:<tick ISO time>` as a second guard.
CREATE TABLE {{schema}}.cron_schedules (
  name            text        PRIMARY KEY,
  kind            text        NOT NULL,
  cron            text        NOT NULL,
  timezone        text        NOT NULL,
  tenant          text        NOT NULL,
  queue           text        NOT NULL,
  priority        smallint    NOT NULL,
  -- The payload of every tick's job, as the kind's schema parsed it.
  payload         jsonb       NOT NULL,
  missed_policy   text        NOT NULL,
  catch_up_limit  integer     NOT NULL,
  -- The first tick not yet handled; null when the expression never fires again.
  next_tick_at    timestamptz,
  -- The newest tick enqueued; null until the first.
  last_tick_at    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- When the definition (cron, time zone, payload…) last changed.
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT cron_schedules_policy_valid CHECK (missed_policy IN ('skip', 'catch-up')),
  CONSTRAINT cron_schedules_limit_positive CHECK (catch_up_limit >= 1),
  CONSTRAINT cron_schedules_priority_range CHECK (priority BETWEEN -1000 AND 1000),
  CONSTRAINT cron_schedules_names_bounded CHECK (
    length(name) BETWEEN 1 AND 128 AND length(kind) BETWEEN 1 AND 128 AND length(tenant) BETWEEN 1 AND 128
    AND length(queue) BETWEEN 1 AND 128)
);
