import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { enqueueFile } from "../../packages/core/src/cli/enqueue-file.js";
import { countRows, createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { allTestJobs } from "../helpers/jobs.js";

let test: TestConveyor;
let scratch: string;
beforeAll(async () => {
  test = await createTestConveyor({ jobs: allTestJobs });
  scratch = await mkdtemp(join(tmpdir(), "conveyor-unique-"));
});
afterAll(async () => {
  await test?.cleanup();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("conveyor jobs enqueue --file with unique", () => {
  it("settles lines with the same unique key like sequential enqueues", async () => {
    const path = join(scratch, "unique.ndjson");
    const line = (n: number, unique?: object) => JSON.stringify({ kind: "item", payload: { n }, ...(unique ? { unique } : {}) });
    writeFileSync(
      path,
      [line(1, { key: "u", onConflict: "replace" }), line(2, { key: "u", onConflict: "replace" }), line(3)].join("\n") + "\n",
    );
    const result = await enqueueFile(test.conveyor, path, {}, false);
    expect(result).toMatchObject({ enqueued: 2, existing: 1, lines: 3 });
    const { rows } = await test.conveyor.pool.query(`SELECT payload FROM "${test.schema}".jobs WHERE unique_key = 'u'`);
    expect(rows).toEqual([{ payload: { n: 2 } }]);
    expect(await countRows(test.conveyor, "jobs")).toBe(2);
  });
});
