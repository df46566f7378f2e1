import type pg from "pg";

/**
 * A schema as text, read from the catalogs: every table with its columns,
 * constraints (and whether each is validated), storage options, indexes and
 * statistics; views, triggers, and each function's signature. The schema's
 * name is written `conveyor`. Two schemas with the same text have the same
 * tables, rules and routines, whatever path of migrations made them; the
 * ledgers' contents are left out. Function bodies are not written: each
 * routine's text is in its file under src/store/routines/, and the
 * `routines` ledger records its hash. The day partitions of job_history are
 * left out (their names are dates, made by job_history_extend); a partition
 * shows its parent and bounds and only what is its own (the columns,
 * constraints, indexes and triggers it inherits are its parent's), and a
 * partitioned table its key.
 */
export async function dumpSchema(db: Pick<pg.Pool, "query">, schema: string): Promise<string> {
  const one = async (sql: string): Promise<string[]> => {
    const { rows } = await db.query<{ line: string }>(sql, [schema]);
    return rows.map((row) => row.line);
  };
  const ns = "(SELECT oid FROM pg_namespace WHERE nspname = $1)";
  const notDay = (relation: string) => `${relation} !~ '^job_history_(before_)?[0-9]{8}$'`;
  const tables = await one(`
    SELECT c.relname AS line FROM pg_class AS c
     WHERE c.relnamespace = ${ns} AND c.relkind IN ('r', 'p') AND ${notDay("c.relname")} ORDER BY c.relname`);
  const out: string[] = [
    "-- The current schema, as a freshly migrated database has it (test/schema-file.test.ts",
    "-- checks it). Generated: `npx vitest run test/schema-file.test.ts -u` rewrites it.",
    "-- Migrations: src/store/migrations/. Functions, views, triggers: src/store/routines/.",
    "",
  ];
  for (const table of tables) {
    const columns = await db.query<{ line: string }>(
      `SELECT format('  %I %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
                     CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END,
                     coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')) AS line
         FROM pg_attribute AS a LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = format('%I.%I', $1::text, $2::text)::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attislocal
        ORDER BY a.attnum`,
      [schema, table],
    );
    const constraints = await db.query<{ line: string }>(
      `SELECT format('  CONSTRAINT %I %s%s', conname, pg_get_constraintdef(oid), CASE WHEN convalidated THEN '' ELSE ' NOT VALID' END) AS line
         FROM pg_constraint WHERE conrelid = format('%I.%I', $1::text, $2::text)::regclass AND contype NOT IN ('t', 'n') AND conislocal ORDER BY conname`,
      [schema, table],
    );
    const options = await db.query<{ line: string }>(
      `SELECT coalesce(' PARTITION OF ' || (SELECT i.inhparent::regclass::text FROM pg_inherits AS i WHERE i.inhrelid = c.oid)
                       || ' ' || pg_get_expr(c.relpartbound, c.oid), '')
              || coalesce(' PARTITION BY ' || pg_get_partkeydef(c.oid), '')
              || coalesce(' WITH (' || array_to_string(reloptions, ', ') || ')', '') AS line
         FROM pg_class AS c WHERE c.oid = format('%I.%I', $1::text, $2::text)::regclass`,
      [schema, table],
    );
    out.push(`CREATE TABLE conveyor.${table} (`);
    out.push([...columns.rows, ...constraints.rows].map((row) => row.line).join(",\n"));
    out.push(`)${options.rows[0]?.line ?? ""};`, "");
  }
  out.push(
    ...(await one(`
      SELECT pg_get_indexdef(i.indexrelid) || ';' AS line
        FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_class AS t ON t.oid = i.indrelid
       WHERE c.relnamespace = ${ns} AND ${notDay("t.relname")} AND NOT c.relispartition
         AND NOT EXISTS (SELECT 1 FROM pg_constraint AS k WHERE k.conindid = i.indexrelid)
       ORDER BY c.relname`)),
    "",
    ...(await one(`
      SELECT pg_get_statisticsobjdef(s.oid) || ';' AS line FROM pg_statistic_ext AS s JOIN pg_class AS t ON t.oid = s.stxrelid
       WHERE s.stxnamespace = ${ns} AND ${notDay("t.relname")} ORDER BY s.stxname`)),
    "",
    ...(await one(`
      SELECT format('CREATE VIEW %I.%I AS%s', $1::text, c.relname, E'\\n' || rtrim(pg_get_viewdef(c.oid, true), ';') || ';') AS line
        FROM pg_class AS c WHERE c.relnamespace = ${ns} AND c.relkind = 'v' ORDER BY c.relname`)),
    "",
    ...(await one(`
      SELECT format('-- FUNCTION %I.%I(%s) RETURNS %s LANGUAGE %s', $1::text, p.proname,
                    pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid), l.lanname) AS line
        FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang
       WHERE p.pronamespace = ${ns} ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`)),
    "",
    ...(await one(`
      SELECT pg_get_triggerdef(t.oid) || ';' AS line FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid
       WHERE c.relnamespace = ${ns} AND NOT t.tgisinternal AND t.tgparentid = 0 ORDER BY t.tgname, c.relname`)),
  );
  const text = out.join("\n").trimEnd() + "\n";
  return text.replaceAll(`${quoteIfNeeded(schema)}.`, "conveyor.");
}

/** The schema name as PostgreSQL's deparser writes it before a dot. */
function quoteIfNeeded(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}
