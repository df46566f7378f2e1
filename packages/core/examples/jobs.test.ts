// Tests of the example jobs, written as your own would be: copy this file
// next to your jobs and adapt it (docs/testing.md). It uses only
// `conveyor-jobs/testing`, which works with any runner; here, vitest.
//
// runHandler needs no database. createTestConveyor uses DATABASE_URL, or
// starts an embedded PostgreSQL once per process.
import { once } from "node:events";
import { rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createTestConveyor, runHandler, startHandler, type TestConveyor } from "conveyor-jobs/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sendEmail } from "./email.js";
import { summarizeText } from "./summarize.js";
import { deliverWebhook, WEBHOOK_SECRET_ENV } from "./webhook.js";

describe("text.summarize (unit: no database)", () => {
  it("counts words and sentences, and reports progress", async () => {
    const { outcome, value, progress } = await runHandler(summarizeText, { text: "Tea first. Then more tea, tea and cake!", top: 2 });
    expect(outcome).toBe("succeeded");
    expect(value).toEqual({ words: 8, sentences: 2, readingMinutes: 1, topWords: [{ word: "cake", count: 1 }, { word: "first", count: 1 }] });
    expect(progress.at(-1)).toEqual({ counted: 8, of: 8 });
  });

  it("stops when cancelled", async () => {
    const run = startHandler(summarizeText, { text: "word ".repeat(50_000) });
    run.cancel(); // before the handler's first check: it throws at once
    expect((await run.result).outcome).toBe("cancelled");
  });

  it("refuses an empty text before running", async () => {
    await expect(runHandler(summarizeText, { text: "" })).rejects.toThrow(/text/);
  });
});

describe("email.send (unit)", () => {
  it("dead-letters an undeliverable address at once, without retrying", async () => {
    const result = await runHandler(sendEmail, { to: "nobody@invalid.example", subject: "Hi", body: "…" });
    expect(result).toMatchObject({ outcome: "failed", nextStatus: "dead" });
  });
});

describe("webhook.deliver (unit, against a local receiver)", () => {
  let server: Server;
  let url: string;
  let answer = 200;
  const received: Array<{ headers: Record<string, unknown>; body: string }> = [];
  const secretBefore = process.env[WEBHOOK_SECRET_ENV];

  beforeAll(async () => {
    process.env[WEBHOOK_SECRET_ENV] = "test-secret";
    server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk) => (body += chunk));
      request.on("end", () => {
        received.push({ headers: request.headers, body });
        response.writeHead(answer).end();
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    if (secretBefore === undefined) delete process.env[WEBHOOK_SECRET_ENV];
    else process.env[WEBHOOK_SECRET_ENV] = secretBefore;
    server.close();
    await once(server, "close");
  });

  it("POSTs a signed body; a 2xx succeeds", async () => {
    answer = 204;
    const result = await runHandler(deliverWebhook, { url, event: "order.paid", data: { order: 7 } });
    expect(result).toMatchObject({ outcome: "succeeded", value: { status: 204 } });
    const [delivery] = received.splice(0);
    expect(JSON.parse(delivery!.body)).toMatchObject({ event: "order.paid", data: { order: 7 } });
    expect(delivery!.headers["webhook-signature"]).toMatch(/^v1,/);
  });

  it("retries a 503 with backoff, and dead-letters a 404 at once", async () => {
    answer = 503;
    expect(await runHandler(deliverWebhook, { url, event: "e", data: null })).toMatchObject({ outcome: "failed", nextStatus: "retrying" });
    answer = 404;
    expect(await runHandler(deliverWebhook, { url, event: "e", data: null })).toMatchObject({ outcome: "failed", nextStatus: "dead" });
    received.length = 0;
  });
});

describe("the example jobs on a test Conveyor (database)", () => {
  let t: TestConveyor;
  beforeAll(async () => {
    t = await createTestConveyor({ jobs: [sendEmail, summarizeText, deliverWebhook] });
  });
  afterAll(() => t.close());

  it("an enqueued email is written to the outbox by drain()", async () => {
    const job = await t.conveyor.enqueue(sendEmail, { to: "ada@example.com", subject: "Hi", body: "Hello" });
    await t.expectEnqueued(sendEmail, { payload: { to: "ada@example.com" }, status: "queued" });
    await t.expectNotEnqueued(summarizeText);
    const { jobs } = await t.drain();
    expect(jobs).toEqual([expect.objectContaining({ id: job.id, status: "succeeded", attempts: 1 })]);
    const { path } = jobs[0]!.result as { path: string };
    expect(path).toMatch(new RegExp(`${job.id}\\.eml$`));
    await rm(path);
  });
});
