import { createHash } from "node:crypto";

/**
 * One SQL function of the schema, with the triggers that call it: the one
 * place its text lives. `migrate` installs it (CREATE OR REPLACE, in one
 * transaction with the rest) when `sha256` differs from what the schema's
 * `routines` ledger records. `{{schema}}` stands for the quoted schema name.
 *
 * Its arguments and result type are fixed once installed: CREATE OR REPLACE
 * cannot change them, so a routine whose signature changes is dropped by a
 * migration first.
 */
export interface Routine {
  /** The function's name in the schema (triggers carry the same name, or a name that begins with it). */
  name: string;
  /** Statements that create or replace the function and its triggers. */
  sql: string;
}

/** The hash `migrate` records for a routine's text (before the schema name is filled in). */
export function routineHash(routine: Routine): string {
  return createHash("sha256").update(routine.sql).digest("hex");
}
