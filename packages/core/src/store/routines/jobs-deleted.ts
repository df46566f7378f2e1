import type { Routine } from "./routine.js";

/**
 * Deleting jobs, by any path (a prune, a purge, a hand-written DELETE),
 * deletes what is recorded about them in the same statement (jobs_forget):
 * one call per statement, over its transition table. A job that moves
 * between states is not deleted (PostgreSQL fires no DELETE statement
 * trigger for a row an UPDATE moves to another partition), so its records
 * stay with it.
 */
export const jobsDeleted: Routine = {
  name: "jobs_deleted",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- \`ARRAY(…)\` so each delete is an index scan whatever the statistics
  -- (a join to the transition table could be planned as a sequential scan).
  PERFORM {{schema}}.jobs_forget(ARRAY(SELECT id FROM deleted), ARRAY(SELECT id FROM deleted WHERE has_dependents));
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_deleted AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_deleted();`,
};
