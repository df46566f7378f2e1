import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AnyJobDefinition } from "../../packages/core/src/core/define-job.js";
import { defineJob, type Worker } from "../../packages/core/src/index.js";
import { allJobs, type ApiTest, call, createApiTest, JOB_FIELDS } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

/** Reports `progress`, then returns `value` as its result. */
const reporter = defineJob({
  kind: "reporter",
  schema: z.object({ value: z.unknown(), progress: z.unknown().optional() }),
  async handler({ payload, progress }) {
    if (payload.progress !== undefined) await progress(payload.progress);
    return payload.value;
  },
});

let test: ApiTest;
let worker: Worker;
beforeAll(async () => {
  test = await createApiTest({}, { jobs: [...allJobs, reporter as unknown as AnyJobDefinition] });
  worker = test.conveyor.worker({ kinds: ["reporter"], pollIntervalMs: 50 });
  await worker.start();
});
afterAll(async () => {
  await worker.stop({ graceMs: 0 });
  await test.cleanup();
});

async function runToEnd(payload: unknown): Promise<any> {
  const created = await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: { kind: "reporter", payload } });
  expect(created.statusCode, created.body).toBe(201);
  expect(created.json).toMatchObject({ result: null, progress: null, progressUpdatedAt: null });
  return waitFor("the job to succeed", async () => {
    const response = await call(test.app, { url: `/v1/jobs/${created.json.id}`, key: test.keys.acme });
    return response.json?.status === "succeeded" ? response.json : null;
  });
}

describe("result and progress in the job JSON", () => {
  it("answers the result the handler returned: object, array, string, null", async () => {
    for (const value of [{ rows: 3, file: "out.csv" }, [1, { two: 2 }], "done", null]) {
      const job = await runToEnd({ value });
      expect(job.result).toEqual(value);
      expect(job.progress).toBeNull();
      expect(job.progressUpdatedAt).toBeNull();
    }
  });

  it("answers the latest progress and when it was stored, in the job and in the list", async () => {
    const job = await runToEnd({ value: "ok", progress: { done: 7, of: 10 } });
    expect(Object.keys(job).filter((key) => key !== "executions" && key !== "requeues").sort()).toEqual(JOB_FIELDS);
    expect(job.progress).toEqual({ done: 7, of: 10 });
    expect(new Date(job.progressUpdatedAt).toISOString()).toBe(job.progressUpdatedAt);
    expect(Date.parse(job.progressUpdatedAt)).toBeLessThanOrEqual(Date.parse(job.finishedAt));

    const list = await call(test.app, { url: "/v1/jobs?kind=reporter&status=succeeded", key: test.keys.acme });
    const listed = list.json.items.find((item: { id: string }) => item.id === job.id);
    expect(listed).toMatchObject({ progress: { done: 7, of: 10 }, progressUpdatedAt: job.progressUpdatedAt, result: "ok" });
  });
});
