import { afterAll, describe, expect, it } from "vitest";
import { ROUTINES, routineHash } from "../packages/core/src/store/routines/index.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { dumpSchema } from "./helpers/schema-dump.js";

const cleanups: TestConveyor[] = [];
afterAll(async () => {
  await Promise.all(cleanups.map((test) => test.cleanup()));
});

describe("the current-schema file", () => {
  it("is what a freshly migrated database has (src/store/schema.sql)", async () => {
    const test = await createTestConveyor({}, { migrate: false });
    cleanups.push(test);
    await test.conveyor.migrate();
    await expect(await dumpSchema(test.conveyor.pool, test.schema)).toMatchFileSnapshot("../packages/core/src/store/schema.sql");
  });

  it("records every routine's hash, and lists every function and trigger the routines create", async () => {
    const test = await createTestConveyor({}, { migrate: false });
    cleanups.push(test);
    await test.conveyor.migrate();
    const { rows } = await test.conveyor.pool.query<{ name: string; sha256: string }>(
      `SELECT name, sha256 FROM "${test.schema}".routines ORDER BY name`,
    );
    expect(rows).toEqual(ROUTINES.map((routine) => ({ name: routine.name, sha256: routineHash(routine) })).sort((a, b) => a.name.localeCompare(b.name)));
    const { rows: functions } = await test.conveyor.pool.query<{ name: string }>(
      `SELECT p.proname AS name FROM pg_proc AS p WHERE p.pronamespace = $1::regnamespace ORDER BY 1`,
      [test.schema],
    );
    const names = new Set(ROUTINES.map((routine) => routine.name));
    for (const fn of functions) expect(names.has(fn.name), `${fn.name} has a routine file`).toBe(true);
  });
});
