import { ConflictError, ConveyorError, DatabaseError, DatabaseReadOnlyError, ValidationError } from "../core/errors.js";

/** Postgres SQLSTATE codes Conveyor reacts to. */
export const PG_UNIQUE_VIOLATION = "23505";
export const PG_CHECK_VIOLATION = "23514";
export const PG_UNTRANSLATABLE_CHARACTER = "22P05";
export const PG_INVALID_TEXT_REPRESENTATION = "22P02";
export const PG_READ_ONLY_SQL_TRANSACTION = "25006";
export const PG_LOCK_NOT_AVAILABLE = "55P03";
export const PG_DEADLOCK_DETECTED = "40P01";
export const PG_SERIALIZATION_FAILURE = "40001";
/** A statement cancelled: by its `statement_timeout`, or on request. */
export const PG_QUERY_CANCELED = "57014";
/** "timestamp out of range", "interval out of range". */
export const PG_DATETIME_FIELD_OVERFLOW = "22008";

interface PgErrorShape {
  code?: string;
  message?: string;
  constraint?: string;
}

/**
 * Turn a driver error into a Conveyor error, in one place. Errors that are
 * already Conveyor's pass through; connection failures and unknown codes
 * become `DatabaseError` with the original as `cause`.
 */
export function translatePgError(error: unknown): Error {
  if (error instanceof ConveyorError) return error;
  const pgError = error as PgErrorShape;
  switch (pgError?.code) {
    case PG_UNIQUE_VIOLATION:
      return new ConflictError(`conflicts with an existing row (${pgError.constraint ?? "unique constraint"})`, { cause: error });
    case PG_CHECK_VIOLATION:
      return new ValidationError(`violates ${pgError.constraint ?? "a check constraint"}`, [], { cause: error });
    case PG_DATETIME_FIELD_OVERFLOW:
      return new ValidationError(`a time or delay is out of range: ${pgError.message ?? "datetime field overflow"}`, [], { cause: error });
    case PG_UNTRANSLATABLE_CHARACTER:
    case PG_INVALID_TEXT_REPRESENTATION:
      return new ValidationError(`the database refused a value: ${pgError.message ?? "invalid input"}`, [], { cause: error });
    case PG_READ_ONLY_SQL_TRANSACTION:
      return new DatabaseReadOnlyError("the database refuses writes: it is read-only (a standby, or default_transaction_read_only is on)", {
        cause: error,
      });
  }
  if (isQueryTimeout(error)) return new DatabaseError("the database did not answer in time (the pool's query timeout)", { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new DatabaseError(`database error: ${message}`, { cause: error });
}

/**
 * True for a transaction the server aborted to break a deadlock or a
 * serialization conflict: nothing it did remains, and running it again is
 * the remedy.
 */
export function isTransientConflict(error: unknown): boolean {
  if (error instanceof Error && error.cause !== undefined && isTransientConflict(error.cause)) return true;
  const code = (error as PgErrorShape | undefined)?.code;
  return code === PG_DEADLOCK_DETECTED || code === PG_SERIALIZATION_FAILURE;
}

/** True for a statement the server cancelled: its `statement_timeout` ran out (or someone cancelled it); nothing it did remains. */
export function isStatementCancelled(error: unknown): boolean {
  if (error instanceof Error && error.cause !== undefined && isStatementCancelled(error.cause)) return true;
  return (error as PgErrorShape | undefined)?.code === PG_QUERY_CANCELED;
}

/** True for a statement that gave up waiting for a lock (its `lock_timeout`); nothing it did remains. */
export function isLockTimeout(error: unknown): boolean {
  if (error instanceof Error && error.cause !== undefined && isLockTimeout(error.cause)) return true;
  return (error as PgErrorShape | undefined)?.code === PG_LOCK_NOT_AVAILABLE;
}

/** True for a statement the server cancelled when it ran past its `statement_timeout`; nothing it did remains. */
export function isStatementTimeout(error: unknown): boolean {
  if (error instanceof Error && error.cause !== undefined && isStatementTimeout(error.cause)) return true;
  return (error as PgErrorShape | undefined)?.code === PG_QUERY_CANCELED;
}

/**
 * True for a statement that hit its client-side deadline (the pool's
 * `query_timeout`): its connection still waits for the answer and must be
 * discarded, not reused.
 */
export function isQueryTimeout(error: unknown): boolean {
  if (error instanceof Error && error.cause !== undefined && isQueryTimeout(error.cause)) return true;
  return error instanceof Error && error.message === "Query read timeout";
}

/** True for errors that mean "the connection or server is gone", worth retrying after a pause. */
export function isConnectionError(error: unknown): boolean {
  // Store methods wrap driver errors (translatePgError); judge the original.
  if (error instanceof Error && error.cause !== undefined && isConnectionError(error.cause)) return true;
  const code = (error as PgErrorShape & { errno?: unknown })?.code ?? "";
  if (/^(08|57P0[1-3]|53300)/.test(code)) return true; // connection exception, admin shutdown, too many connections
  if (["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "EHOSTUNREACH"].includes(code)) return true;
  if (isQueryTimeout(error)) return true;
  const message = error instanceof Error ? error.message : "";
  return /Connection terminated|connection timeout|Client has encountered a connection error|not queryable|ECONNREFUSED|ECONNRESET/i.test(message);
}
