import { HISTORY, LIVE, STATE, TERMINAL } from "./status-sets.js";
import { JOB_COLUMNS, jobColumnsOf } from "./job-columns.js";

// How a statement writes a job's state, and moves the job between the
// tables of its states: jobs_live (every state a job runs or waits in),
// jobs_dead, and job_history (by day of finished_at). A job that ends is
// deleted from jobs_live and inserted into jobs_dead or job_history in the
// statement that ends it, and one that comes back the other way round, each
// named here; nothing relies on PostgreSQL moving a row whose partition key
// an UPDATE changed. What follows a move is done in the same statement:
// the release of dependents recorded for the commit and the waiters told
// (routines/jobs-ended.ts), and, for a cancel, the worker told. Not
// statements themselves, so this module is not among the store's queries.

/**
 * Every column of the jobs table, in its order, with its type: what a moved
 * row is inserted as (test/job-moves.test.ts checks it against the schema).
 */
export const JOB_TABLE = {
  id: "uuid",
  tenant: "text",
  queue: "text",
  kind: "text",
  payload: "jsonb",
  priority: "smallint",
  status: "text",
  attempts: "integer",
  max_attempts: "integer",
  run_at: "timestamptz",
  locked_by: "text",
  current_execution_id: "uuid",
  lease_expires_at: "timestamptz",
  cancel_requested: "boolean",
  idempotency_key: "text",
  last_error: "jsonb",
  result: "jsonb",
  created_at: "timestamptz",
  updated_at: "timestamptz",
  started_at: "timestamptz",
  finished_at: "timestamptz",
  unique_key: "text",
  unique_states: "text[]",
  progress: "jsonb",
  progress_updated_at: "timestamptz",
  has_dependents: "boolean",
  trace_context: "jsonb",
  limit_key: "text",
  awaited: "boolean",
  dead_letter_id: "uuid",
  dead_reason: "text",
} as const;

/** The columns of JOB_TABLE, in order. */
export const JOB_TABLE_COLUMNS = Object.keys(JOB_TABLE) as ReadonlyArray<keyof typeof JOB_TABLE>;

/** A column of the jobs table. */
export type JobColumn = keyof typeof JOB_TABLE;

/**
 * What one write does to a job row: an SQL expression per column it
 * changes, over the row as it was (aliased `j`) and whatever its statement
 * joins. `status` is the state it moves to.
 */
export type JobWrites = Partial<Record<JobColumn, string>> & { status: string };
// `status` reads only what its statement joins, never `j`: a move decides
// which table a row goes to before it reaches the row.

/**
 * The unique-key rule of every state change: a job keeps its unique key
 * only in the states its key is held in (a sleeping job is mid-run, and
 * keeps it wherever `running` holds one). A key released is never taken
 * back, so a job that returns to a held state cannot collide with the one
 * that took the key meanwhile.
 */
function uniqueKeyAfter(status: string): string {
  return `CASE WHEN j.unique_key IS NOT NULL AND ((${status}) = ANY (j.unique_states) OR ((${status}) = ${STATE.sleeping} AND ${STATE.running} = ANY (j.unique_states))) THEN j.unique_key END`;
}

/** Every column a write sets, the unique key included. */
function written(writes: JobWrites): Partial<Record<JobColumn, string>> {
  return { unique_key: uniqueKeyAfter(writes.status), ...writes };
}

/** `column = expression, …`: the SET list of an UPDATE of jobs aliased `j` (a column written as itself is left out). */
export function setList(writes: JobWrites): string {
  return Object.entries(written(writes))
    .filter(([column, value]) => value !== `j.${column}`)
    .map(([column, value]) => `${column} = ${value}`)
    .join(",\n    ");
}

/** Every column of the row as the write leaves it, in table order: what a move inserts. */
function rowAfter(writes: JobWrites): string {
  const set = written(writes);
  // Typed: a NULL or a literal alone has no type an INSERT could take.
  return JOB_TABLE_COLUMNS.map((column) => `${set[column] === undefined ? `j.${column}` : `(${set[column]})::${JOB_TABLE[column]}`} AS ${column}`).join(", ");
}

const COLUMN_LIST = JOB_TABLE_COLUMNS.join(", ");

/** What a move of jobs reads: the rows it applies to, joined to the row `j`. */
export interface MoveSource {
  /** Prefix of the tables, `{{schema}}` unless the statement is built for one schema. */
  schema?: string;
  /** The CTE's name each move's CTEs start with. */
  name: string;
  /**
   * The CTE of the rows to move, joined to `j` as `alias`, whose columns the
   * writes may read. A move of live jobs joins each of its branches to the
   * rows of that branch's states alone, so a branch with no rows reads none.
   */
  from: string;
  alias: string;
  /** The condition that picks, and joins, the rows (over `j` and `alias`). */
  where: string;
  /** The rows of `from` the move applies to (over `alias`): a table is read only for rows that move from it. */
  only?: string;
  /** More columns each moved row returns, by name: expressions over `j` as it was and `alias`; after JOB_COLUMNS. */
  returning?: Readonly<Record<string, string>>;
  /**
   * Whether the ends and returns of jobs with dependents are recorded for
   * the release at commit (jobs_ended). Default true; false only inside
   * the release, which walks the jobs it moves itself.
   */
  release?: boolean;
  /** Tell the worker of each job that stays running that its cancel was requested (NOTIFY `<schema>:cancel`). Default false. */
  notifyCancel?: boolean;
  /**
   * Whether a row that ends in job_history is stored there (over `alias`;
   * default: every one). One that is not is deleted with what is recorded
   * about it (jobs_forget) in this statement, unless other jobs depend on
   * it or a waiter awaits it: those are stored whatever this says, so that
   * their release and their waiters read the end.
   */
  keep?: string;
}

/** `source.returning` as what a RETURNING adds (`, value AS column`, …) and as the names a later SELECT reads (`, column`, …). */
function returned(source: MoveSource): { also: string; alsoNames: string } {
  const extra = Object.entries(source.returning ?? {});
  return { also: extra.map(([column, value]) => `, ${value} AS ${column}`).join(""), alsoNames: extra.map(([column]) => `, ${column}`).join("") };
}

/** The schema's name as a channel prefix: the prefix is the quoted identifier. */
function channel(schema: string, name: string): string {
  return `btrim('${schema}', '"') || ':${name}'`;
}

/**
 * What follows a move, forced into the statement: a CTE of one row whose
 * columns call jobs_ended for the rows of \`moved\` that need it, and send
 * the statement's notifications. `<name>_moved` reads it once.
 */
function effects(name: string, parts: readonly string[]): string {
  return `${name}_effects AS (
  SELECT ${parts.map((part, i) => `(${part}) AS e${i}`).join(", ")}
)`;
}

/** A call of jobs_ended over `rows` (ids, bad, depended, awaited as columns of it), when any row needs one. */
function endedCall(schema: string, rows: string, bad: string, dir: 1 | -1, awaited: string, release: boolean): string {
  return `SELECT ${schema}.jobs_ended(e.ids, e.bad, e.depended, e.awaited, ${dir}, ${release}) FROM (
    SELECT array_agg(r.id) AS ids, array_agg(${bad}) AS bad, array_agg(r.has_dependents) AS depended, array_agg(${awaited}) AS awaited
    FROM ${rows} AS r WHERE r.has_dependents${awaited === "false" ? "" : ` OR ${awaited}`}) AS e
  WHERE e.ids IS NOT NULL`;
}

/** The filter that makes a branch of `<name>_moved` read the effects CTE (evaluated once, before its first row). */
function afterEffects(name: string): string {
  return `(SELECT count(*) FROM ${name}_effects) >= 0`;
}

/**
 * CTEs that apply `writes` to live jobs: `<name>_kept`, an UPDATE of those
 * whose new state is live, and `<name>_ended`, the rows of those that end,
 * deleted from jobs_live and inserted into job_history or jobs_dead as
 * written. `<name>_moved` is their union: JOB_COLUMNS as written, then
 * `returning`. Starts with a comma: it follows the statement's own CTEs.
 */
export function moveLiveJobs(source: MoveSource, writes: JobWrites): string {
  const s = source.schema ?? "{{schema}}";
  const { name, where, from, alias } = source;
  const status = `(${writes.status})`;
  const only = source.only ? ` AND (${source.only})` : "";
  const rows = (states: string) => `(SELECT * FROM ${from} AS ${alias} WHERE ${status} IN (${states})${only}) AS ${alias}`;
  const { also, alsoNames } = returned(source);
  const keep = source.keep ? `, (${source.keep}) OR j.has_dependents OR j.awaited AS stored` : "";
  const stored = source.keep ? " AND stored" : "";
  return `
, ${name}_kept AS (
  UPDATE ${s}.jobs_live AS j SET
    ${setList(writes)}
  FROM ${rows(LIVE)}
  WHERE ${where}
  RETURNING ${jobColumnsOf("j")}${also}
), ${name}_ended AS (
  DELETE FROM ${s}.jobs_live AS j
  USING ${rows(TERMINAL)}
  WHERE ${where}
  RETURNING ${rowAfter(writes)}${also}${keep}
), ${name}_to_history AS (
  INSERT INTO ${s}.job_history (${COLUMN_LIST}) SELECT ${COLUMN_LIST} FROM ${name}_ended WHERE status IN (${HISTORY})${stored}
), ${name}_to_dead AS (
  INSERT INTO ${s}.jobs_dead (${COLUMN_LIST}) SELECT ${COLUMN_LIST} FROM ${name}_ended WHERE status = ${STATE.dead}
), ${effects(name, [
    endedCall(s, `${name}_ended`, `r.status <> ${STATE.succeeded}`, 1, "r.awaited", source.release ?? true),
    ...(source.notifyCancel
      ? [`SELECT count(pg_notify(${channel(s, "cancel")}, k.current_execution_id::text)) FROM ${name}_kept AS k WHERE k.status = ${STATE.running}`]
      : []),
    ...(source.keep
      ? [`SELECT ${s}.jobs_forget(f.ids, '{}') FROM (SELECT array_agg(r.id) AS ids FROM ${name}_ended AS r WHERE r.status IN (${HISTORY}) AND NOT r.stored) AS f WHERE f.ids IS NOT NULL`]
      : []),
  ])}, ${name}_moved AS (
  SELECT * FROM ${name}_kept WHERE ${afterEffects(name)}
  UNION ALL SELECT ${JOB_COLUMNS}${alsoNames} FROM ${name}_ended WHERE ${afterEffects(name)}
)`;
}

/** The tables of ended jobs a return reads. */
export type EndedTable = "jobs_dead" | "job_history";

/**
 * CTEs that bring ended jobs back to live states: the rows of `tables`
 * that `where` picks, deleted and inserted into jobs_live as written
 * (`writes.status` must be live), a dead job's dead letter cleared: it
 * leaves the dead-letter queue as it leaves jobs_dead. `<name>_moved`
 * returns them: JOB_COLUMNS as written, then `returning`. Starts with a
 * comma.
 */
export function returnEndedJobs(source: MoveSource, writes: JobWrites, tables: readonly EndedTable[] = ["jobs_dead", "job_history"]): string {
  const s = source.schema ?? "{{schema}}";
  const { name, where, from, alias } = source;
  const { also, alsoNames } = returned(source);
  const deletes = tables.map(
    (table) => `, ${name}_from_${table} AS (
  DELETE FROM ${s}.${table} AS j
  USING ${source.only ? `(SELECT * FROM ${from} AS ${alias} WHERE ${source.only}) AS ${alias}` : `${from} AS ${alias}`}
  WHERE ${where}
  RETURNING ${rowAfter(writes)}, j.status AS ended_status${also}
)`,
  );
  const gone = tables.map((table) => `SELECT * FROM ${name}_from_${table}`).join(" UNION ALL ");
  return `
${deletes.join("\n")}, ${name}_back AS (
  INSERT INTO ${s}.jobs_live (${COLUMN_LIST}) SELECT ${COLUMN_LIST} FROM (${gone}) AS back
), ${effects(name, [endedCall(s, `(${gone})`, `r.ended_status <> ${STATE.succeeded}`, -1, "false", source.release ?? true)])}, ${name}_moved AS (
  SELECT ${JOB_COLUMNS}${alsoNames} FROM (${gone}) AS back WHERE ${afterEffects(name)}
)`;
}
