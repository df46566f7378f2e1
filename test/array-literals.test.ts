import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { numberArray, textArray, timestampArray, uuidArray } from "../packages/core/src/store/array-literals.js";
import { connectTestClient } from "./helpers/database.js";

// The store builds array parameters itself (array-literals.ts): whatever a
// string holds must reach PostgreSQL unchanged, element for element.
describe("array literals", () => {
  let client: pg.Client;

  beforeAll(async () => {
    client = await connectTestClient();
  });

  afterAll(async () => {
    await client?.end();
  });

  async function roundTrip(literal: string, type: string): Promise<unknown[]> {
    const { rows } = await client.query(`SELECT value FROM unnest($1::${type}) WITH ORDINALITY AS u(value, n) ORDER BY n`, [literal]);
    return rows.map((row: { value: unknown }) => row.value);
  }

  it("carries any string unchanged, and null as NULL", async () => {
    const values = [
      "plain",
      "",
      "NULL",
      "null",
      'a "quoted" word',
      "back\\slash\\",
      '\\"',
      "{braces}, commas, and spaces ",
      " leading",
      '{"json": ["x", "y\\"z"], "n": 1}',
      "ünïcödé ✓ 🚀",
      "new\nline\ttab",
      null,
    ];
    expect(await roundTrip(textArray(values), "text[]")).toEqual(values);
  });

  it("carries numbers, integers and fractions, and null", async () => {
    const values = [0, -1000, 1000, 25, 1.5, 0.001, 1e21, null];
    expect(await roundTrip(numberArray(values), "float8[]")).toEqual(values);
  });

  it("carries instants to the millisecond, whatever the session's time zone", async () => {
    await client.query("SET TIME ZONE 'America/St_Johns'");
    const values = [new Date("2026-11-23T12:34:56.789Z"), new Date(0), null];
    expect(await roundTrip(timestampArray(values), "timestamptz[]")).toEqual(values);
  });

  it("carries canonical UUIDs unquoted", async () => {
    const values = ["0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b", "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-7fff-bfff-ffffffffffff"];
    expect(await roundTrip(uuidArray(values), "uuid[]")).toEqual(values);
    expect(await roundTrip(uuidArray([]), "uuid[]")).toEqual([]);
  });

  it("builds an empty array", async () => {
    expect(await roundTrip(textArray([]), "text[]")).toEqual([]);
  });
});
