/**
 * A queue's page in real headless Chromium (as browser.test.ts: an API
 * server on a real port, this file's own schema): reached from the queue's
 * name wherever it is shown, with its jobs by state, its throughput and
 * failure rate (its own, not the other queues'), its limits and limits per
 * key with the busiest keys, Pause and Resume, the workers serving it and
 * its oldest ready job; at 390 px too. And what the overview shows around
 * it: a compact limits cell, rates in round units ("60 per minute"), and a
 * flow graph wider than a phone saying that it scrolls. Screenshots go to
 * test-artifacts/dashboard/.
 */
import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ApiServer, startApiServer } from "../../packages/http/src/server.js";
import { defineJob, PermanentError } from "../../packages/core/src/index.js";
import { jobsIn } from "../bulk-actions-support.js";
import { runUntilFinished, silent } from "../cli/support.js";
import { apiRequest, chromiumAvailable, DASHBOARD_ARTIFACTS, openBrowserPage, refreshes, saveScreenshot } from "../helpers/browser.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { sql } from "../worker/support.js";

const available = chromiumAvailable("the dashboard's queue page tests");

/** Fails (for good) when told to, else succeeds. */
const send = defineJob({
  kind: "mail.send",
  schema: z.object({ n: z.number().int(), fail: z.boolean().optional() }),
  maxAttempts: 1,
  handler: ({ payload }) => {
    if (payload.fail) throw new PermanentError(`mail ${payload.n} bounced`);
  },
});
/** Jobs made in SQL by jobsIn, never run here. */
const item = defineJob({ kind: "item", schema: z.object({ n: z.number().int() }), handler: async () => {} });

let test: TestConveyor;
let server: ApiServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const keys = { admin: "", acme: "" };
const browserErrors: string[] = [];
const ids = { oldestMail: "" };

const api = (method: string, path: string, body?: unknown, key = keys.admin) => apiRequest(server.url, key, method, path, body);
const screenshot = (name: string, on: Page = page) => saveScreenshot(on, name);
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 100 });

async function signIn(on: Page, key: string): Promise<void> {
  await on.goto(`${server.url}/`);
  const signOut = on.getByRole("button", { name: "Sign out" });
  if (await signOut.isVisible()) await signOut.click();
  await on.getByLabel("API key").fill(key);
  await on.getByRole("button", { name: "Sign in" }).click();
  await signOut.waitFor();
}

/** A 390 × 844 phone page, signed in with `key`. */
async function phone(key: string): Promise<{ narrow: BrowserContext; phonePage: Page }> {
  const narrow = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const phonePage = await narrow.newPage();
  phonePage.setDefaultTimeout(20_000);
  phonePage.on("pageerror", (error) => browserErrors.push(error.message));
  await signIn(phonePage, key);
  return { narrow, phonePage };
}

describe.skipIf(!available)("a queue's page in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
    test = await createTestConveyor({ jobs: [send, item], logger: silent });
    keys.admin = (await test.conveyor.apiKeys.create({ admin: true, name: "queue page test" })).key;
    keys.acme = (await test.conveyor.apiKeys.create({ tenant: "acme" })).key;

    // Queue "mail": 3 attempts succeed and 1 fails; queue "reports": 5 succeed, which mail's page must not count.
    await test.conveyor.enqueueMany([
      ...[1, 2, 3].map((n) => ({ job: "mail.send", payload: { n }, queue: "mail" })),
      { job: "mail.send", payload: { n: 4, fail: true }, queue: "mail" },
      ...[5, 6, 7, 8, 9].map((n) => ({ job: "mail.send", payload: { n }, queue: "reports" })),
    ]);
    await runUntilFinished(test.conveyor, ["mail.send"]);

    // Ready jobs of mail, the first made ready 10 minutes ago: the oldest.
    const ready = await jobsIn(test.conveyor, "queued", 3, { kind: "item", queue: "mail" });
    ids.oldestMail = ready[1]!;
    await sql(test.conveyor, "UPDATE {{schema}}.jobs SET run_at = now() - interval '10 minutes' WHERE id = $1", [ids.oldestMail]);
    // Keyed jobs waiting: hooks.a has 3, hooks.b 1.
    await test.conveyor.enqueueMany([
      ...[1, 2, 3].map((n) => ({ job: "item", payload: { n }, queue: "mail", limitKey: "hooks.a" })),
      { job: "item", payload: { n: 4 }, queue: "mail", limitKey: "hooks.b" },
    ]);

    // Workers: one serving mail, one serving only reports, one serving every queue.
    for (const [id, queues] of [
      ["worker-mail", "{mail}"],
      ["worker-reports", "{reports}"],
      ["worker-everything", null],
    ] as const) {
      await sql(test.conveyor, "INSERT INTO {{schema}}.workers (id, hostname, pid, queues, kinds, concurrency) VALUES ($1, 'host-1', 7, $2, '{item}', 4)", [id, queues]);
    }
    server = await startApiServer(test.conveyor, { port: 0, logger: silent });
    ({ browser, context, page } = await openBrowserPage(browserErrors));
    await signIn(page, keys.admin);
  }, 120_000);

  afterAll(async () => {
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.close();
    await test?.cleanup();
  });

  it("opens from the queue's name on the overview, with its counts, throughput, failure rate and oldest ready job", async () => {
    await page.goto(`${server.url}/#/`);
    await page.locator("[data-testid=queues] tr[data-queue=mail] [data-testid=queue-link]").click();
    await poll(() => page.evaluate<string>("window.location.hash")).toBe("#/queues/mail");
    const queuePage = page.getByTestId("queue-page");
    await queuePage.waitFor();
    expect(await queuePage.locator("h1").textContent()).toBe("Queue mail ");

    const count = (status: string) => queuePage.locator(`[data-testid=queue-counts] [data-status=${status}] dd`).textContent();
    await poll(() => count("queued")).toBe("7");
    expect(await count("succeeded")).toBe("3");
    expect(await count("dead")).toBe("1");
    expect(await count("running")).toBe("0");
    // Each count links to the jobs it counts.
    expect(await queuePage.locator("[data-testid=queue-counts] [data-status=dead] a").getAttribute("href")).toBe("#/jobs?queue=mail&status=dead");

    expect(await queuePage.getByTestId("queue-succeeded").textContent()).toBe("3");
    expect(await queuePage.getByTestId("queue-failed").textContent()).toBe("1");
    expect(await queuePage.getByTestId("queue-failure-rate").textContent()).toBe("25%");
    // The hour's chart counts this queue's jobs only: 4 + 7 enqueued, 3 succeeded and 1 failed, none of reports' 5.
    await poll(() => queuePage.locator("[data-testid=throughput-chart] figcaption").textContent()).toBe(
      "Last hour: 11 enqueued3 succeeded1 failed (attempts per minute)",
    );

    const oldest = queuePage.getByTestId("queue-oldest-ready");
    expect(await oldest.locator("a").getAttribute("href")).toBe(`#/jobs/${ids.oldestMail}`);
    expect(await oldest.textContent()).toMatch(/^\S+ item \(tenant default\) has waited 10 min \d+ s\.$/);
    await screenshot("80-queue-page");
  });

  it("shows its workers (those serving it or every queue), its limits and its limits per key with the busiest keys", async () => {
    expect((await api("PATCH", "/v1/queues/mail", { concurrency: 3, rateLimit: { count: 60, intervalMs: 60_000 } })).status).toBe(200);
    expect((await api("PATCH", "/v1/queues/mail/key-limits", { concurrency: 2, rateLimit: { count: 10, intervalMs: 300_000 } })).status).toBe(200);
    expect((await api("PATCH", "/v1/queues/mail/keys/hooks.a/limits", { concurrency: 1 })).status).toBe(200);
    try {
      await page.goto(`${server.url}/#/queues/mail`);
      const queuePage = page.getByTestId("queue-page");
      await poll(() => queuePage.locator("[data-testid=workers] tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-worker-id")).sort())).toEqual([
        "worker-everything",
        "worker-mail",
      ]);
      await poll(() => queuePage.getByTestId("queue-limits-text").textContent()).toBe("Across all workers: 3 at once, 60 per minute.");
      const perKey = queuePage.getByTestId("queue-key-limits");
      await poll(() => perKey.getByTestId("key-default").textContent()).toMatch(/^Every key: 2 at once, 10 per 5 minutes \(set .+ ago\)$/);
      expect(await perKey.locator("[data-testid=key-overrides] tr[data-key='hooks.a'] td").allTextContents()).toEqual(["hooks.a", "1 at once", expect.stringMatching(/ago$/)]);
      // The busiest keys: most jobs waiting first, with their running jobs and the limits that apply.
      expect(await perKey.locator("[data-testid=key-limits] tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-key")))).toEqual(["hooks.a", "hooks.b"]);
      expect(await perKey.locator("[data-testid=key-limits] tr[data-key='hooks.a'] td").allTextContents()).toEqual(["hooks.a", "3", "0", "1 at once (override)"]);
      await screenshot("81-queue-page-limits");
    } finally {
      await api("PATCH", "/v1/queues/mail", { concurrency: null, rateLimit: null });
      await api("DELETE", "/v1/queues/mail/key-limits");
    }
  });

  it("pauses and resumes the queue from its page, for admin keys only", async () => {
    const pausedOf = async () => (await api("GET", "/v1/queues")).json.items.find((queue: any) => queue.queue === "mail").paused as boolean;
    await page.goto(`${server.url}/#/queues/mail`);
    const queuePage = page.getByTestId("queue-page");
    await queuePage.getByRole("button", { name: "pause queue mail" }).click();
    await poll(pausedOf).toBe(true);
    await poll(() => queuePage.locator("h1 [data-testid=status]").textContent()).toBe("paused");
    await queuePage.getByRole("button", { name: "resume queue mail" }).click();
    await poll(pausedOf).toBe(false);
    await poll(() => queuePage.locator("h1 [data-testid=status]").count()).toBe(0);
    await queuePage.getByRole("button", { name: "pause queue mail" }).waitFor();

    // A tenant key sees its own jobs of the queue, and no button the API would refuse it.
    await jobsIn(test.conveyor, "queued", 2, { kind: "item", queue: "mail", tenant: "acme" });
    const tenantPage = await context.newPage();
    try {
      await signIn(tenantPage, keys.acme);
      await tenantPage.goto(`${server.url}/#/queues/mail`);
      const tenantQueue = tenantPage.getByTestId("queue-page");
      await poll(() => tenantQueue.locator("[data-testid=queue-counts] [data-status=queued] dd").textContent()).toBe("2");
      await refreshes(tenantPage, "me", 1, 0);
      expect(await tenantPage.getByRole("button", { name: "pause queue mail" }).count()).toBe(0);
    } finally {
      await tenantPage.close();
    }
  });

  it("links every queue name to its page: the jobs list, a job, the oldest ready job, the workers", async () => {
    await page.goto(`${server.url}/#/jobs?queue=mail`);
    const firstRowLink = page.locator("[data-testid=jobs] tbody tr").first().getByTestId("queue-link");
    await poll(() => firstRowLink.getAttribute("href")).toBe("#/queues/mail");
    await page.goto(`${server.url}/#/jobs/${ids.oldestMail}`);
    expect(await page.locator("[data-testid=job-page] [data-testid=queue-link]").getAttribute("href")).toBe("#/queues/mail");
    await page.goto(`${server.url}/#/`);
    expect(await page.locator("[data-testid=oldest-ready] [data-testid=queue-link]").getAttribute("href")).toBe("#/queues/mail");
    await poll(() => page.locator("[data-testid=workers] tr[data-worker-id=worker-reports] [data-testid=queue-link]").getAttribute("href")).toBe("#/queues/reports");

    // A name that needs encoding reaches its own page.
    await jobsIn(test.conveyor, "queued", 1, { kind: "item", queue: "team/a:b" });
    await page.goto(`${server.url}/#/`);
    const odd = page.locator("[data-testid=queues] tr[data-queue='team/a:b'] [data-testid=queue-link]");
    expect(await odd.getAttribute("href")).toBe("#/queues/team%2Fa%3Ab");
    await odd.click();
    await poll(() => page.locator("[data-testid=queue-page] h1").textContent()).toBe("Queue team/a:b ");
  });

  it("keeps the overview's limits cell compact, with rates in round units", async () => {
    expect((await api("POST", "/v1/queues/mail/pause")).status).toBe(200);
    expect((await api("PATCH", "/v1/queues/mail", { concurrency: 3, rateLimit: { count: 60, intervalMs: 60_000 } })).status).toBe(200);
    expect((await api("PATCH", "/v1/queues/mail/key-limits", { concurrency: 4, rateLimit: { count: 1, intervalMs: 5_000 } })).status).toBe(200);
    try {
      await page.goto(`${server.url}/#/`);
      const cell = page.locator("[data-testid=queues] tr[data-queue=mail] [data-testid=limits]");
      await poll(() => cell.getByTestId("queue-limits").textContent()).toBe("paused 3 at once · 60 per minute");
      await poll(() => cell.getByTestId("key-limits-summary").textContent()).toBe("per key 4 at once · 1 per 5 seconds");
      // Two lines, one per kind of limit: the cell's text is no taller than two of its lines.
      const lines = await cell.evaluate((element: any) => {
        const style = (globalThis as any).getComputedStyle(element);
        const range = (globalThis as any).document.createRange();
        range.selectNodeContents(element);
        const tops = new Set(Array.from<any>(range.getClientRects()).map((rect) => Math.round(rect.top)));
        return { tops: tops.size, height: range.getBoundingClientRect().height, lineHeight: parseFloat(style.lineHeight) || 20 };
      });
      expect(lines.height, JSON.stringify(lines)).toBeLessThanOrEqual(2.5 * lines.lineHeight);
      // And the table still fits its box at 1280 px: nothing of it is scrolled out of view.
      const box = await page.locator("[data-testid=queues]").evaluate((table: any) => ({ scroll: table.parentElement.scrollWidth, client: table.parentElement.clientWidth }));
      expect(box.scroll, JSON.stringify(box)).toBeLessThanOrEqual(box.client);
      await screenshot("83-overview-limits-compact");
    } finally {
      await api("POST", "/v1/queues/mail/resume");
      await api("PATCH", "/v1/queues/mail", { concurrency: null, rateLimit: null });
      await api("DELETE", "/v1/queues/mail/key-limits");
    }
  });

  it("says that a flow graph wider than a phone scrolls, with a shadow on the side out of view", async () => {
    const created = await api("POST", "/v1/flows", {
      name: "wide",
      jobs: {
        start: { kind: "item", payload: { n: 0 }, delayMs: 600_000 },
        ...Object.fromEntries([1, 2, 3, 4].map((n) => [`part${n}`, { kind: "item", payload: { n }, dependsOn: ["start"] }])),
      },
    });
    expect(created.status).toBe(201);
    const shadow = (on: Page, side: "before" | "after") =>
      on.locator(".scroll-frame").evaluate((frame: any, pseudo: string) => (globalThis as any).getComputedStyle(frame, `::${pseudo}`).opacity, side);

    // At 1280 px the graph fits: no hint, no shadow.
    await page.goto(`${server.url}/#/flows/${created.json.id}`);
    await page.locator("svg[data-testid=flow-graph]").waitFor();
    await poll(() => page.locator(".scroll-box").getAttribute("data-overflow")).toBe("");
    expect(await page.getByTestId("scroll-hint").count()).toBe(0);

    const { narrow, phonePage } = await phone(keys.admin);
    try {
      await phonePage.goto(`${server.url}/#/flows/${created.json.id}`);
      await phonePage.locator("svg[data-testid=flow-graph]").waitFor();
      const hint = phonePage.getByTestId("scroll-hint");
      await poll(() => hint.textContent()).toBe("The graph is wider than the screen: scroll sideways to see the rest →");
      expect(await hint.isVisible()).toBe(true);
      expect(await phonePage.locator(".scroll-box").getAttribute("data-overflow")).toBe("right");
      await poll(() => shadow(phonePage, "after")).toBe("1");
      expect(await shadow(phonePage, "before")).toBe("0");
      expect(await phonePage.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await screenshot("84-narrow-flow-scroll-hint", phonePage);

      // Scrolled to its end, the shadow moves to the start and the hint points back.
      await phonePage.locator(".flow-canvas").evaluate((canvas: any) => {
        canvas.scrollLeft = canvas.scrollWidth;
      });
      await poll(() => phonePage.locator(".scroll-box").getAttribute("data-overflow")).toBe("left");
      expect(await hint.textContent()).toBe("← scroll back for the start of the graph");
      await poll(() => shadow(phonePage, "before")).toBe("1");
    } finally {
      await narrow.close();
    }
  });

  it("fits a 390 px wide screen", async () => {
    const { narrow, phonePage } = await phone(keys.admin);
    try {
      await phonePage.goto(`${server.url}/#/queues/mail`);
      await phonePage.getByTestId("queue-counts").waitFor();
      await phonePage.getByTestId("throughput-chart").waitFor();
      expect(await phonePage.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await screenshot("82-narrow-queue-page", phonePage);
    } finally {
      await narrow.close();
    }
  });
});
