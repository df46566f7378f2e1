import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiTest, call, createApiTest } from "./support.js";

let test: ApiTest;
let createdIds: string[];
beforeAll(async () => {
  test = await createApiTest();
  const jobs = Array.from({ length: 1_000 }, (_, n) => ({ kind: "item", payload: { n }, queue: n % 2 === 0 ? "even" : "odd" }));
  const response = await call(test.app, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: { jobs } });
  expect(response.statusCode).toBe(201);
  createdIds = response.json.jobs.map((job: { id: string }) => job.id);
});
afterAll(() => test.cleanup());

/** Follow nextCursor to the end; returns every id in page order and the page count. */
async function pageThrough(query: string, key = test.keys.acme): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const url: string = `/v1/jobs?${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const response = await call(test.app, { url, key });
    expect(response.statusCode, response.body).toBe(200);
    ids.push(...response.json.items.map((job: { id: string }) => job.id));
    cursor = response.json.nextCursor;
    pages++;
  } while (cursor !== null && pages < 2_000);
  return { ids, pages };
}

describe("cursor paging over 1,000 jobs", () => {
  it("visits every job exactly once, newest first, in pages of 100", async () => {
    const { ids, pages } = await pageThrough("limit=100");
    expect(pages).toBe(10);
    expect(ids).toEqual([...createdIds].reverse());
  });

  it("works with a page size that does not divide the total (37) and ends with a null cursor", async () => {
    const { ids, pages } = await pageThrough("limit=37");
    expect(pages).toBe(Math.ceil(1_000 / 37));
    expect(new Set(ids).size).toBe(1_000);
    expect(ids).toEqual([...createdIds].reverse());
  });

  it("combines with filters", async () => {
    const { ids } = await pageThrough("queue=even&limit=64");
    expect(ids).toEqual(createdIds.filter((_, n) => n % 2 === 0).reverse());
  });

  it("is stable while jobs are added: new jobs never show up on later pages or repeat", async () => {
    const first = await call(test.app, { url: "/v1/jobs?limit=250", key: test.keys.acme });
    const seen = first.json.items.map((job: { id: string }) => job.id);
    await call(test.app, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: { jobs: [{ kind: "item", payload: { n: -1 } }] } });
    let cursor = first.json.nextCursor;
    while (cursor) {
      const page = await call(test.app, { url: `/v1/jobs?limit=250&cursor=${encodeURIComponent(cursor)}`, key: test.keys.acme });
      seen.push(...page.json.items.map((job: { id: string }) => job.id));
      cursor = page.json.nextCursor;
    }
    expect(seen).toEqual([...createdIds].reverse());
  });

  it("defaults to 50 per page", async () => {
    const response = await call(test.app, { url: "/v1/jobs", key: test.keys.acme });
    expect(response.json.items).toHaveLength(50);
  });
});
