/**
 * `POST /v1/maintenance/prune` through the app: an admin key prunes with the
 * defaults or the ages it gives; a tenant key is refused with 403 and nothing
 * is deleted; bad bodies are problems naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DAY_MS, makeJobs, surviving } from "../retention-support.js";
import { type ApiTest, call, createApiTest, expectProblem } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

const prune = (key: string, body?: unknown) => call(test.app, { method: "POST", url: "/v1/maintenance/prune", key, body });

describe("POST /v1/maintenance/prune", () => {
  it("refuses a tenant key with 403 and deletes nothing", async () => {
    const old = await makeJobs(test.conveyor, "held", 2, "succeeded", 400 * DAY_MS);
    const body = expectProblem(await prune(test.keys.acme), 403, "FORBIDDEN");
    expect(body.detail).toMatch(/admin/);
    // Refused for who it is, whatever the body says.
    expectProblem(await prune(test.keys.acme, { batchSize: 0 }), 403, "FORBIDDEN");
    expect(await surviving(test.conveyor, "jobs", old)).toEqual([...old].sort());
  });

  it("prunes with the default ages for an admin key, with or without a body", async () => {
    const old = await makeJobs(test.conveyor, "held", 3, "cancelled", 8 * DAY_MS);
    const deadOld = await makeJobs(test.conveyor, "held", 1, "dead", 31 * DAY_MS);
    const young = await makeJobs(test.conveyor, "held", 1, "succeeded", 2 * DAY_MS);

    const response = await prune(test.keys.admin);
    expect(response.statusCode, response.body).toBe(200);
    // The two left over from the tenant-key test are old enough too.
    expect(response.json).toEqual({ jobs: 5, deadLetters: 1, flows: 0, events: 0 });
    expect(await surviving(test.conveyor, "jobs", [...old, ...deadOld])).toEqual([]);
    expect(await surviving(test.conveyor, "jobs", young)).toEqual(young);

    const again = await prune(test.keys.admin, {});
    expect(again.statusCode).toBe(200);
    expect(again.json).toEqual({ jobs: 0, deadLetters: 0, flows: 0, events: 0 });
  });

  it("takes the ages and batch size from the body", async () => {
    // Finished two days ago: past a one-day age (a job goes once its whole day is past it), never past the default 7 days.
    const old = await makeJobs(test.conveyor, "held", 3, "succeeded", 2 * DAY_MS);
    const response = await prune(test.keys.admin, { finishedMs: DAY_MS, deadLetterMs: DAY_MS, batchSize: 2 });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json.jobs).toBeGreaterThanOrEqual(3);
    expect(await surviving(test.conveyor, "jobs", old)).toEqual([]);
  });

  it("answers 422 naming the field for a bad body", async () => {
    for (const [body, field] of [
      [{ finishedMs: -1 }, "finishedMs"],
      [{ batchSize: 0 }, "batchSize"],
      [{ deadLetterMs: "30d" }, "deadLetterMs"],
      [{ olderThan: 5 }, ""],
    ] as const) {
      const problem = expectProblem(await prune(test.keys.admin, body), 422, "VALIDATION");
      expect(JSON.stringify(problem.errors), JSON.stringify(body)).toContain(field);
    }
  });
});
