/**
 * Flows, batches and dependencies over HTTP: create (and repeat, and
 * conflict), graph refusals as problem+json, tenant isolation, paging,
 * cancel, a job's dependency links, and `dependsOn` on POST /v1/jobs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiTest, call, createApiTest, expectProblem, JOB_FIELDS, rows } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

const MISSING = "0190f5c2-0000-7000-8000-000000000000";
const post = (url: string, body: unknown, key = test.keys.acme, headers?: Record<string, string>) =>
  call(test.app, { method: "POST", url, key, body, headers });
const get = (url: string, key = test.keys.acme) => call(test.app, { url, key });

/** A diamond: a → (b, c) → d, all items. */
const diamond = (n: number) => ({
  a: { kind: "item", payload: { n } },
  b: { kind: "item", payload: { n }, dependsOn: ["a"] },
  c: { kind: "item", payload: { n }, dependsOn: [{ node: "a", onFailure: "run" }], priority: 3 },
  d: { kind: "item", payload: { n }, dependsOn: ["b", "c"], onDependencyFailure: "cancel" },
});

describe("POST /v1/flows", () => {
  it("creates a flow: 201, Location, the jobs by name in the key's tenant, waiting on their dependencies", async () => {
    const response = await post("/v1/flows", { name: "diamond 1", jobs: diamond(1) });
    expect(response.statusCode, response.body).toBe(201);
    const { id, created, jobs } = response.json;
    expect(created).toBe(true);
    expect(response.headers.location).toBe(`/v1/flows/${id}`);
    expect(Object.keys(jobs).sort()).toEqual(["a", "b", "c", "d"]);
    expect(Object.keys(jobs.a).sort()).toEqual(JOB_FIELDS);
    expect(jobs.a).toMatchObject({ status: "queued", tenant: "acme", kind: "item" });
    for (const name of ["b", "c", "d"]) expect(jobs[name]).toMatchObject({ status: "waiting", tenant: "acme" });
    expect(jobs.c.priority).toBe(3);
    const edges = await rows(test, "SELECT depends_on, job_id, on_failure FROM {{schema}}.job_dependencies WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, depends_on", [
      [jobs.b.id, jobs.c.id, jobs.d.id],
    ]);
    expect(edges).toEqual(
      [
        { depends_on: jobs.a.id, job_id: jobs.b.id, on_failure: "fail" },
        { depends_on: jobs.a.id, job_id: jobs.c.id, on_failure: "run" },
        ...[jobs.b.id, jobs.c.id].sort().map((parent) => ({ depends_on: parent, job_id: jobs.d.id, on_failure: "cancel" })),
      ].sort((x, y) => (x.job_id === y.job_id ? x.depends_on.localeCompare(y.depends_on) : x.job_id.localeCompare(y.job_id))),
    );
  });

  it("answers a repeated idempotency key with the same request with 200 and the first flow; a different request with 409", async () => {
    const body = { idempotencyKey: "order-7", jobs: diamond(7) };
    const first = await post("/v1/flows", body);
    expect(first.statusCode, first.body).toBe(201);
    const again = await post("/v1/flows", body);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json.created).toBe(false);
    expect(again.json.id).toBe(first.json.id);
    expect(again.headers.location).toBeUndefined();
    for (const name of ["a", "b", "c", "d"]) expect(again.json.jobs[name].id).toBe(first.json.jobs[name].id);
    // The header is the same key.
    const byHeader = await post("/v1/flows", { jobs: diamond(7) }, test.keys.acme, { "idempotency-key": "order-7" });
    expect(byHeader.statusCode).toBe(200);
    expect(byHeader.json.id).toBe(first.json.id);

    const conflict = expectProblem(await post("/v1/flows", { idempotencyKey: "order-7", jobs: diamond(8) }), 409, "IDEMPOTENCY_CONFLICT");
    expect(conflict.detail).toContain('idempotency key "order-7" was already used for flow');
    expect(conflict).toMatchObject({ idempotencyKey: "order-7", flowId: first.json.id });
    const both = expectProblem(await post("/v1/flows", { idempotencyKey: "a", jobs: diamond(7) }, test.keys.acme, { "idempotency-key": "b" }), 400, "INVALID_PARAMETER");
    expect(both.detail).toContain("differ");
    // Keys are per tenant: globex's "order-7" is a new flow.
    expect((await post("/v1/flows", body, test.keys.globex)).statusCode).toBe(201);
  });

  it("settles 12 concurrent requests with one key on one flow: one 201, the rest 200 with the same jobs", async () => {
    const body = { idempotencyKey: "race-1", jobs: diamond(11) };
    const answers = await Promise.all(Array.from({ length: 12 }, () => post("/v1/flows", body)));
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((answer) => answer.json.id)).size).toBe(1);
    expect(new Set(answers.map((answer) => answer.json.jobs.d.id)).size).toBe(1);
    const [{ n }] = await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.flow_jobs WHERE flow_id = $1", [answers[0]!.json.id]);
    expect(n).toBe(4);
  });

  it("refuses a cycle with 422 naming it, and writes nothing", async () => {
    const before = await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs");
    const problem = expectProblem(
      await post("/v1/flows", {
        jobs: {
          start: { kind: "item", payload: { n: 1 } },
          x: { kind: "item", payload: { n: 1 }, dependsOn: ["start", "z"] },
          y: { kind: "item", payload: { n: 1 }, dependsOn: ["x"] },
          z: { kind: "item", payload: { n: 1 }, dependsOn: ["y"] },
        },
      }),
      422,
      "VALIDATION",
    );
    expect(problem.detail).toMatch(/^the flow has a cycle: (x → z → y → x|y → x → z → y|z → y → x → z)$/);
    expect(problem.errors).toEqual([{ path: expect.stringMatching(/^jobs\.[xyz]\.dependsOn$/), message: expect.stringMatching(/^cycle /) }]);
    expect(await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs")).toEqual(before);
  });

  it("refuses an unknown node, a bad payload, a bad policy and an empty flow with 422 naming the path", async () => {
    const unknown = expectProblem(await post("/v1/flows", { jobs: { a: { kind: "item", payload: { n: 1 }, dependsOn: ["nope"] } } }), 422, "VALIDATION");
    expect(unknown.detail).toBe('jobs.a.dependsOn.0: no job named "nope" in this flow');
    const payload = expectProblem(await post("/v1/flows", { jobs: { a: { kind: "item", payload: { n: "one" } } } }), 422, "VALIDATION");
    expect(payload.errors[0].path).toBe("jobs.a.payload.n");
    const policy = expectProblem(await post("/v1/flows", { jobs: { a: { kind: "item", payload: { n: 1 }, onDependencyFailure: "ignore" } } }), 422, "VALIDATION");
    expect(policy.errors[0].path).toBe("jobs.a.onDependencyFailure");
    expectProblem(await post("/v1/flows", { jobs: {} }), 422, "VALIDATION");
    expectProblem(await post("/v1/flows", { jobs: { a: { kind: "item", payload: { n: 1 }, unknownField: 1 } } }), 422, "VALIDATION");
  });

  it("refuses a dependency on another tenant's job exactly as on a missing one", async () => {
    const theirs = (await post("/v1/jobs", { kind: "item", payload: { n: 1 } }, test.keys.globex)).json;
    const foreign = expectProblem(await post("/v1/flows", { jobs: { a: { kind: "item", payload: { n: 1 }, dependsOn: [{ jobId: theirs.id }] } } }), 422, "VALIDATION");
    const missing = expectProblem(await post("/v1/flows", { jobs: { a: { kind: "item", payload: { n: 1 }, dependsOn: [{ jobId: MISSING }] } } }), 422, "VALIDATION");
    expect(foreign.detail).toBe(`dependsOn: no job ${theirs.id} in tenant "acme"`);
    expect(foreign.detail.replace(theirs.id, "ID")).toBe(missing.detail.replace(MISSING, "ID"));
    // The same on POST /v1/jobs.
    const single = expectProblem(await post("/v1/jobs", { kind: "item", payload: { n: 1 }, dependsOn: [theirs.id] }), 422, "VALIDATION");
    expect(single.detail).toBe(`dependsOn: no job ${theirs.id} in tenant "acme"`);
  });

  it("refuses a tenant key naming another tenant with 403", async () => {
    expectProblem(await post("/v1/flows", { tenant: "globex", jobs: diamond(1) }), 403, "FORBIDDEN");
  });
});

describe("POST /v1/jobs with dependsOn", () => {
  it("enqueues a job waiting on existing jobs, with per-dependency policies", async () => {
    const parent = (await post("/v1/jobs", { kind: "item", payload: { n: 1 } })).json;
    const other = (await post("/v1/jobs", { kind: "item", payload: { n: 2 } })).json;
    const response = await post("/v1/jobs", { kind: "item", payload: { n: 3 }, dependsOn: [parent.id, { jobId: other.id, onFailure: "run" }], onDependencyFailure: "cancel" });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json.status).toBe("waiting");
    const edges = await rows(test, "SELECT depends_on, on_failure FROM {{schema}}.job_dependencies WHERE job_id = $1 ORDER BY depends_on", [response.json.id]);
    expect(edges).toEqual(
      [
        { depends_on: parent.id, on_failure: "cancel" },
        { depends_on: other.id, on_failure: "run" },
      ].sort((x, y) => x.depends_on.localeCompare(y.depends_on)),
    );
  });

  it("refuses a malformed dependency, an empty list, onDependencyFailure alone and dependsOn with unique", async () => {
    expect(expectProblem(await post("/v1/jobs", { kind: "item", payload: { n: 1 }, dependsOn: ["not-a-uuid"] }), 422, "VALIDATION").errors[0].path).toMatch(/^dependsOn\.0/);
    expectProblem(await post("/v1/jobs", { kind: "item", payload: { n: 1 }, dependsOn: [] }), 422, "VALIDATION");
    const alone = expectProblem(await post("/v1/jobs", { kind: "item", payload: { n: 1 }, onDependencyFailure: "run" }), 422, "VALIDATION");
    expect(alone.errors).toEqual([{ path: "onDependencyFailure", message: "only with dependsOn" }]);
    const parent = (await post("/v1/jobs", { kind: "item", payload: { n: 1 } })).json;
    const unique = expectProblem(await post("/v1/jobs", { kind: "item", payload: { n: 1 }, dependsOn: [parent.id], unique: { key: "u" } }), 422, "VALIDATION");
    expect(unique.detail).toContain("unique cannot be combined with dependsOn");
  });
});

describe("GET /v1/flows/{id} and the tenant rules", () => {
  it("shows every job with its node, status and dependencies (named by node), and the counts by status", async () => {
    const created = (await post("/v1/flows", { name: "shown", jobs: diamond(2) })).json;
    const response = await get(`/v1/flows/${created.id}`);
    expect(response.statusCode, response.body).toBe(200);
    const flow = response.json;
    expect(flow).toMatchObject({ id: created.id, tenant: "acme", kind: "flow", name: "shown", idempotencyKey: null, callbackJobId: null });
    expect(flow.counts).toEqual({ waiting: 3, queued: 1, running: 0, retrying: 0, sleeping: 0, succeeded: 0, cancelled: 0, dead: 0 });
    const byNode = Object.fromEntries(flow.jobs.map((entry: any) => [entry.node, entry]));
    expect(byNode.a.dependsOn).toEqual([]);
    expect(byNode.b.dependsOn).toEqual([{ jobId: created.jobs.a.id, node: "a" }]);
    expect(byNode.d.dependsOn.map((dep: any) => dep.node).sort()).toEqual(["b", "c"]);
    expect(byNode.d.job).toMatchObject({ id: created.jobs.d.id, status: "waiting" });
    // Admin keys see it too.
    expect((await get(`/v1/flows/${created.id}`, test.keys.admin)).statusCode).toBe(200);
    // The list counts the same jobs, in the same statement as its rows.
    const listed = (await get("/v1/flows?limit=1000")).json.items.find((item: any) => item.id === created.id);
    expect(listed.counts).toEqual(flow.counts);
  });

  it("answers another tenant's flow with 404, exactly as a missing one, on read and cancel, and cancels nothing", async () => {
    const theirs = (await post("/v1/flows", { jobs: diamond(3) }, test.keys.globex)).json;
    for (const [method, suffix] of [["GET", ""], ["POST", "/cancel"]] as const) {
      const foreign = expectProblem(await call(test.app, { method, url: `/v1/flows/${theirs.id}${suffix}`, key: test.keys.acme }), 404, "NOT_FOUND");
      const missing = expectProblem(await call(test.app, { method, url: `/v1/flows/${MISSING}${suffix}`, key: test.keys.acme }), 404, "NOT_FOUND");
      expect(foreign.detail).toBe(`flow ${theirs.id} not found`);
      expect(missing.detail).toBe(`flow ${MISSING} not found`);
    }
    const statuses = await rows(test, "SELECT status FROM {{schema}}.jobs WHERE id = ANY($1::uuid[])", [Object.values(theirs.jobs).map((job: any) => job.id)]);
    expect(statuses.map((row) => row.status).sort()).toEqual(["queued", "waiting", "waiting", "waiting"]);
    expectProblem(await get(`/v1/jobs/${theirs.jobs.b.id}/dependencies`), 404, "NOT_FOUND");
    expectProblem(await get("/v1/flows/not-a-uuid"), 400, "INVALID_PARAMETER");
  });
});

describe("GET /v1/flows", () => {
  it("pages newest first with a cursor, filters by kind, and shows a tenant key only its tenant's", async () => {
    const isolated = await createApiTest();
    try {
      const made: string[] = [];
      for (let i = 0; i < 5; i++) made.push((await call(isolated.app, { method: "POST", url: "/v1/flows", key: isolated.keys.acme, body: { jobs: diamond(i) } })).json.id);
      const batch = await call(isolated.app, {
        method: "POST",
        url: "/v1/batches",
        key: isolated.keys.acme,
        body: { jobs: [{ kind: "item", payload: { n: 1 } }], callback: { kind: "item", payload: { n: 2 } } },
      });
      await call(isolated.app, { method: "POST", url: "/v1/flows", key: isolated.keys.globex, body: { jobs: diamond(9) } });
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await call(isolated.app, { url: `/v1/flows?kind=flow&limit=2${cursor ? `&cursor=${cursor}` : ""}`, key: isolated.keys.acme });
        expect(page.statusCode, page.body).toBe(200);
        expect(page.json.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.json.items.map((flow: any) => flow.id));
        cursor = page.json.nextCursor;
      } while (cursor);
      expect(seen).toEqual([...made].reverse());
      const batches = await call(isolated.app, { url: "/v1/flows?kind=batch", key: isolated.keys.acme });
      expect(batches.json.items.map((flow: any) => [flow.id, flow.kind, flow.callbackJobId])).toEqual([[batch.json.id, "batch", batch.json.callback.id]]);
      const batchDetail = await call(isolated.app, { url: `/v1/flows/${batch.json.id}`, key: isolated.keys.acme });
      expect(batches.json.items[0].counts).toEqual(batchDetail.json.counts);
      expect((await call(isolated.app, { url: "/v1/flows", key: isolated.keys.admin })).json.items).toHaveLength(7);
      expect((await call(isolated.app, { url: "/v1/flows?tenant=globex", key: isolated.keys.admin })).json.items).toHaveLength(1);
      expectProblem(await call(isolated.app, { url: "/v1/flows?tenant=globex", key: isolated.keys.acme }), 403, "FORBIDDEN");
      expectProblem(await call(isolated.app, { url: "/v1/flows?kind=dag", key: isolated.keys.acme }), 400, "INVALID_PARAMETER");
    } finally {
      await isolated.cleanup();
    }
  });
});

describe("POST /v1/flows/{id}/cancel", () => {
  it("cancels every job that has not started, and a repeat changes nothing", async () => {
    const created = (await post("/v1/flows", { jobs: diamond(4) })).json;
    const response = await post(`/v1/flows/${created.id}/cancel`, undefined);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json).toEqual({ id: created.id, cancelled: 4, cancelRequested: 0 });
    const flow = (await get(`/v1/flows/${created.id}`)).json;
    expect(flow.counts.cancelled).toBe(4);
    expect((await post(`/v1/flows/${created.id}/cancel`, undefined)).json).toEqual({ id: created.id, cancelled: 0, cancelRequested: 0 });
  });
});

describe("GET /v1/jobs/{id}/dependencies", () => {
  it("lists a job's parents and children with their nodes, status and policy, its flow and its counts", async () => {
    const created = (await post("/v1/flows", { jobs: diamond(5) })).json;
    const { a, b, c, d } = created.jobs;
    const middle = (await get(`/v1/jobs/${c.id}/dependencies`)).json;
    expect(middle).toEqual({
      jobId: c.id,
      flowId: created.id,
      node: "c",
      dependencies: [{ jobId: a.id, kind: "item", status: "queued", node: "a", onFailure: "run" }],
      dependents: [{ jobId: d.id, kind: "item", status: "waiting", node: "d", onFailure: "cancel" }],
      counts: { pending: 1, failed: 0, blocking: 0 },
    });
    const root = (await get(`/v1/jobs/${a.id}/dependencies`)).json;
    expect(root.counts).toBeNull();
    expect(root.dependents.map((link: any) => link.node).sort()).toEqual(["b", "c"]);
    const leaf = (await get(`/v1/jobs/${d.id}/dependencies`, test.keys.admin)).json;
    expect(leaf.dependencies.map((link: any) => link.jobId).sort()).toEqual([b.id, c.id].sort());
    expect(leaf.dependents).toEqual([]);
    const loose = (await post("/v1/jobs", { kind: "item", payload: { n: 1 } })).json;
    expect((await get(`/v1/jobs/${loose.id}/dependencies`)).json).toEqual({ jobId: loose.id, flowId: null, node: null, dependencies: [], dependents: [], counts: null });
    expectProblem(await get(`/v1/jobs/${MISSING}/dependencies`), 404, "NOT_FOUND");
  });
});

describe("POST /v1/batches", () => {
  it("creates members and a waiting callback, repeats by key, and shows as a flow of kind batch", async () => {
    const body = {
      name: "nightly",
      idempotencyKey: "nightly-1",
      jobs: [{ kind: "item", payload: { n: 1 } }, { kind: "item", payload: { n: 2 }, queue: "bulk" }],
      callback: { kind: "item", payload: { n: 0 }, when: "failed" },
    };
    const response = await post("/v1/batches", body);
    expect(response.statusCode, response.body).toBe(201);
    const batch = response.json;
    expect(batch.created).toBe(true);
    expect(batch.jobs.map((job: any) => [job.status, job.queue, job.payload.n])).toEqual([
      ["queued", "default", 1],
      ["queued", "bulk", 2],
    ]);
    expect(batch.callback).toMatchObject({ status: "waiting", payload: { n: 0 } });
    const again = await post("/v1/batches", body);
    expect(again.statusCode).toBe(200);
    expect(again.json).toMatchObject({ id: batch.id, created: false, callback: { id: batch.callback.id } });
    const flow = (await get(`/v1/flows/${batch.id}`)).json;
    expect(flow).toMatchObject({ kind: "batch", name: "nightly", callbackJobId: batch.callback.id });
    expect(flow.jobs.find((entry: any) => entry.node === "callback").dependsOn.map((dep: any) => dep.node).sort()).toEqual(["0", "1"]);
    expectProblem(await post("/v1/batches", { ...body, callback: { kind: "item", payload: { n: 0 }, when: "sometimes" } }), 422, "VALIDATION");
    expectProblem(await post("/v1/batches", { jobs: [], callback: { kind: "item", payload: { n: 0 } } }), 422, "VALIDATION");
    // Members and the callback wait on nothing but each other: dependsOn is not theirs to set.
    const member = expectProblem(await post("/v1/batches", { jobs: [{ kind: "item", payload: { n: 1 }, dependsOn: ["x"] }], callback: { kind: "item", payload: { n: 0 } } }), 422, "VALIDATION");
    expect(member.errors[0].path).toBe("jobs.0.dependsOn");
    expectProblem(await post("/v1/batches", { jobs: [{ kind: "item", payload: { n: 1 } }], callback: { kind: "item", payload: { n: 0 }, dependsOn: ["0"] } }), 422, "VALIDATION");
  });
});
