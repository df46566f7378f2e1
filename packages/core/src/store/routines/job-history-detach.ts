import type { Routine } from "./routine.js";

/**
 * Retention's first step: detach from job_history every day partition that
 * ends by `p_cutoff`, except one that holds a job of a kind in `p_kept`
 * (kinds kept longer than the cutoff; their day waits, and a prune deletes
 * its other rows one by one), and free the idempotency keys of its jobs.
 * Returns the detached tables' names; each is
 * then dropped with its records by job_history_drop (a separate
 * transaction, so that job_history is locked only for the detach). The
 * detach takes an ACCESS EXCLUSIVE lock on job_history for a moment: it
 * waits at most `p_lock_timeout_ms` for one, so a long read of history
 * holds a prune back instead of holding completions back behind it; a day
 * not detached this time is detached by a later prune.
 */
export const jobHistoryDetach: Routine = {
  name: "job_history_detach",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_detach(p_cutoff timestamptz, p_kept text[], p_lock_timeout_ms integer)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
  part record;
  detached text[] := '{}';
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
  FOR part IN
    SELECT c.relname, {{schema}}.job_history_bound(c.oid, 'TO') AS bound
    FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
    WHERE i.inhparent = '{{schema}}.job_history'::regclass
      AND {{schema}}.job_history_bound(c.oid, 'TO') <= p_cutoff
    ORDER BY 2
  LOOP
    IF cardinality(p_kept) > 0 THEN
      CONTINUE WHEN (SELECT EXISTS (SELECT 1 FROM {{schema}}.job_history AS h
                                    WHERE h.tableoid = format('{{schema}}.%I', part.relname)::regclass
                                      AND h.kind = ANY(p_kept)));
    END IF;
    BEGIN
      EXECUTE format('ALTER TABLE {{schema}}.job_history DETACH PARTITION {{schema}}.%I', part.relname);
      -- Its jobs can no longer be read: their idempotency keys are freed in
      -- the same transaction, so a key never names a job nobody can read.
      EXECUTE format('DELETE FROM {{schema}}.job_keys AS k USING {{schema}}.%I AS h
                      WHERE h.idempotency_key IS NOT NULL AND k.tenant = h.tenant
                        AND k.idempotency_key = h.idempotency_key AND k.job_id = h.id', part.relname);
      detached := detached || part.relname::text;
    EXCEPTION WHEN lock_not_available THEN
      RETURN detached;
    END;
  END LOOP;
  RETURN detached;
END
$$;`,
};
