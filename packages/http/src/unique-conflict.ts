import type { UniqueJobConflictError } from "conveyor-jobs";
import { HttpProblem } from "./problem.js";

/** The header that says what a `unique` option did: created, kept or replaced. */
export const UNIQUE_OUTCOME_HEADER = "conveyor-unique-outcome";

/** A unique key held by another job, as 409 problem+json naming the key and the holder. */
export function uniqueConflictProblem(error: UniqueJobConflictError): HttpProblem {
  return new HttpProblem(409, "UNIQUE_CONFLICT", error.message, {
    extensions: { uniqueKey: error.uniqueKey, holderId: error.holderId },
  });
}
