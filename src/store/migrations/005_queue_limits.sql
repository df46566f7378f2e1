-- Queue limits, pause/resume and tenant fairness (issue #7).
-- A queue with no row here, or a row with nothing set, is claimed on the fast
-- path (jobClaim) exactly as before; only paused or limited queues are left
-- to the limited claim (sql/claims-limited.ts).

CREATE TABLE {{schema}}.queue_settings (
  name               text        PRIMARY KEY,
  paused             boolean     NOT NULL DEFAULT false,
  -- Most jobs of this queue running at once, across every worker.
  concurrency_limit  integer,
  -- Fixed window: at most rate_limit claims per window of rate_interval_ms,
  -- the window starting at the first claim after the previous one ended.
  rate_limit         integer,
  rate_interval_ms   integer,
  window_started_at  timestamptz,
  window_count       integer     NOT NULL DEFAULT 0,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT queue_settings_name_bounded CHECK (length(name) BETWEEN 1 AND 128),
  CONSTRAINT queue_settings_concurrency_positive CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1),
  CONSTRAINT queue_settings_rate_complete CHECK ((rate_limit IS NULL) = (rate_interval_ms IS NULL)),
  CONSTRAINT queue_settings_rate_positive CHECK (rate_limit IS NULL OR (rate_limit >= 1 AND rate_interval_ms >= 1)),
  CONSTRAINT queue_settings_window_count_nonnegative CHECK (window_count >= 0)
);

CREATE TABLE {{schema}}.tenant_settings (
  tenant             text        PRIMARY KEY,
  -- Most jobs of this tenant running at once, across every worker.
  concurrency_limit  integer,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT tenant_settings_tenant_bounded CHECK (length(tenant) BETWEEN 1 AND 128),
  CONSTRAINT tenant_settings_concurrency_positive CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1)
);

-- Tenant-fair claim: a loose index scan walks the distinct tenants with ready
-- work (one probe per tenant), then takes each tenant's next jobs in order.
CREATE INDEX jobs_ready_by_tenant_idx ON {{schema}}.jobs (tenant, priority, run_at, id)
  WHERE status IN ('queued', 'retrying');

-- Running jobs per queue or tenant are counted through jobs_running_lease_idx
-- (every running job, at most the workers' total concurrency): no extra index,
-- so the claim and completion hot path maintain nothing new.
