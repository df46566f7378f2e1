-- Retention for the layouts with a day-partitioned history (B, C, D): drop
-- every day partition of job_history and job_attempts_history (where the
-- layout has it) that ends at or before the cutoff. Partitions are named
-- <table>_YYYYMMDD. The runner installs this after the layout's schema.
CREATE FUNCTION drop_history_before(cutoff timestamptz) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE r record; n integer := 0;
BEGIN
  FOR r IN
    SELECT c.relname FROM pg_inherits AS i
    JOIN pg_class AS c ON c.oid = i.inhrelid
    JOIN pg_class AS p ON p.oid = i.inhparent
    WHERE p.relname IN ('job_history', 'job_attempts_history')
      AND to_date(right(c.relname, 8), 'YYYYMMDD') + 1 <= cutoff
  LOOP
    EXECUTE format('DROP TABLE %I', r.relname);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;
