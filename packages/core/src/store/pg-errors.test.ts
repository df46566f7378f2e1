import { describe, expect, it } from "vitest";
import { ConflictError, DatabaseError, ValidationError } from "../core/errors.js";
import { isConnectionError, translatePgError } from "./pg-errors.js";

describe("translatePgError", () => {
  it("maps SQLSTATEs to typed errors, keeping the original as cause", () => {
    const unique = Object.assign(new Error("dup"), { code: "23505", constraint: "jobs_pkey" });
    expect(translatePgError(unique)).toBeInstanceOf(ConflictError);
    expect(translatePgError(Object.assign(new Error("c"), { code: "23514" }))).toBeInstanceOf(ValidationError);
    const other = translatePgError(Object.assign(new Error("boom"), { code: "XX000" }));
    expect(other).toBeInstanceOf(DatabaseError);
    expect((other as DatabaseError).cause).toBeInstanceOf(Error);
  });
});

describe("isConnectionError", () => {
  it("recognises a lost server, also through the DatabaseError wrapper", () => {
    const shutdown = Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    expect(isConnectionError(shutdown)).toBe(true);
    expect(isConnectionError(translatePgError(shutdown))).toBe(true);
    expect(isConnectionError(translatePgError(refused))).toBe(true);
    expect(isConnectionError(translatePgError(new Error("Connection terminated unexpectedly")))).toBe(true);
  });

  it("does not mistake a bad statement for an outage", () => {
    expect(isConnectionError(translatePgError(Object.assign(new Error("c"), { code: "23514" })))).toBe(false);
    expect(isConnectionError(translatePgError(Object.assign(new Error("syntax"), { code: "42601" })))).toBe(false);
  });
});
