-- Per-queue counts (the overview, GET /v1/queues, the queue-depth gauge)
-- read the waiting, running, succeeded, cancelled and dead jobs of a queue,
-- for all tenants or one, through this index (sql/queues.ts): at most the
-- exact-count limit of entries per queue and state, so a state with no
-- jobs is counted 0 from one probe, finished jobs are counted as exactly
-- as unfinished ones, and a tenant's jobs in a queue shared with others are
-- counted without reading the others'. Ready jobs (queued, retrying) are
-- left out: a claim reads them in run order through jobs_ready_by_queue_idx,
-- and an index of ready jobs by (queue, status) would be a plan the claim
-- could take instead, reading and sorting a queue's whole backlog.
CREATE INDEX IF NOT EXISTS jobs_by_queue_status_tenant_idx ON {{schema}}.jobs (queue, status, tenant)
  WHERE status IN ('waiting', 'running', 'succeeded', 'cancelled', 'dead');
