// Where a job with dependents ends or comes back from its end, for the
// triggers of the dependents' release (jobs-release-dependents.ts records
// each, jobs-release-recorded.ts releases them at commit). Not a routine
// itself. A job ends by moving from jobs_live into jobs_dead or
// job_history, and comes back by moving out of them; a succeeded job never
// comes back, so only a cancelled one's leaving history is looked at.

const EVENTS = [
  { table: "jobs_dead", suffix: "", event: "INSERT", when: "NEW.has_dependents" },
  { table: "jobs_dead", suffix: "_returned", event: "DELETE", when: "OLD.has_dependents" },
  { table: "job_history", suffix: "", event: "INSERT", when: "NEW.has_dependents" },
  { table: "job_history", suffix: "_returned", event: "DELETE", when: "OLD.has_dependents AND OLD.status = 'cancelled'" },
] as const;

/**
 * The row triggers named `name` (and `name`_returned) that call `fn` on
 * each end and return of a job with dependents: plain ones, or constraint
 * triggers deferred to the commit. Each is dropped first, as a constraint
 * trigger cannot be replaced in place.
 */
export function endTriggers(name: string, fn: string, deferred: boolean): string {
  return EVENTS.map(
    ({ table, suffix, event, when }) => `DROP TRIGGER IF EXISTS ${name}${suffix} ON {{schema}}.${table};
CREATE ${deferred ? "CONSTRAINT " : ""}TRIGGER ${name}${suffix} AFTER ${event} ON {{schema}}.${table}
  ${deferred ? "DEFERRABLE INITIALLY DEFERRED " : ""}FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION {{schema}}.${fn}();`,
  ).join("\n");
}
