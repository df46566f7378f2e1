import { READY } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * The distinct keys with ready jobs in one queue, in key order, after
 * p_after (exclusive) and up to p_until (inclusive; null: no end), at most
 * p_count of them: a loose index scan of jobs_ready_by_limit_key_idx, one
 * probe per key, however many jobs each key has waiting.
 */
export const jobLimitKeysReady: Routine = {
  name: "job_limit_keys_ready",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_limit_keys_ready(p_queue text, p_after text, p_until text, p_count integer)
RETURNS SETOF text LANGUAGE sql STABLE AS $fn$
  WITH RECURSIVE walk AS (
    (SELECT j.limit_key FROM {{schema}}.jobs AS j
     WHERE j.status IN (${READY}) AND j.queue = p_queue AND j.limit_key > p_after
     ORDER BY j.limit_key LIMIT 1)
    UNION ALL
    SELECT (SELECT j.limit_key FROM {{schema}}.jobs AS j
            WHERE j.status IN (${READY}) AND j.queue = p_queue AND j.limit_key > w.limit_key
            ORDER BY j.limit_key LIMIT 1)
    FROM walk AS w WHERE w.limit_key IS NOT NULL AND (p_until IS NULL OR w.limit_key < p_until)
  )
  SELECT w.limit_key FROM walk AS w
  WHERE w.limit_key IS NOT NULL AND (p_until IS NULL OR w.limit_key <= p_until)
  LIMIT p_count
$fn$;`,
};
