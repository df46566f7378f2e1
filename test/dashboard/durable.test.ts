/**
 * A durable job's page in real headless Chromium (as browser.test.ts: an
 * API server on a real port, this file's own schema), at 1280 and 390 px:
 * its steps table (a step, a wait that received an event, a sleep), a
 * rerun from a step after its confirmation (the job queued again, the
 * forgotten records gone), Resume, both named on the timeline, and no
 * steps section for a job without records. Screenshots go to test-artifacts/dashboard/.
 */
import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../packages/core/src/index.js";
import { type ApiServer, startApiServer } from "../../packages/http/src/server.js";
import { silent } from "../cli/support.js";
import { apiRequest, chromiumAvailable, DASHBOARD_ARTIFACTS, openBrowserPage, saveScreenshot } from "../helpers/browser.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";

const available = chromiumAvailable("the dashboard durable-execution tests");

/** Markup in a step's result: the page must show it as text. */
const MARKUP = '<img src=x onerror="document.title=1">';

/** A step, a wait for the account's payment (a day at most), then a ten-minute sleep. */
const trial = defineJob({
  kind: "user.trial",
  schema: z.object({ account: z.string() }),
  handler: async ({ payload, step, sleep, waitForEvent }) => {
    await step("create-account", () => ({ account: payload.account, note: MARKUP }));
    const paid = await waitForEvent("payment", { event: "invoice.paid", key: payload.account, timeoutMs: 86_400_000 });
    await sleep("cool-off", 600_000);
    return { paid };
  },
});
const plain = defineJob({ kind: "plain", schema: z.object({}), handler: async () => {} });

let test: TestConveyor;
let server: ApiServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let adminKey = "";
const jobs = { wide: "", narrow: "", plain: "" };
const browserErrors: string[] = [];

const api = (method: string, path: string, body?: unknown) => apiRequest(server.url, adminKey, method, path, body);
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 100 });
/** The step rows of the page as "name state", in order. */
const stepRows = (on: Page) =>
  on.locator("[data-testid=job-step]").evaluateAll((rows) => rows.map((row) => `${row.getAttribute("data-step")} ${row.querySelector("[data-testid=status]")!.textContent}`));
const steps = async (id: string) => (await api("GET", `/v1/jobs/${id}/steps`)).json.items as Array<{ name: string; state: string }>;

/** Run a trial until it sleeps on its cool-off: it waits, gets its payment over the API, and falls asleep again. */
async function sleepingTrial(account: string): Promise<string> {
  const { id } = await test.conveyor.enqueue(trial, { account });
  await waitFor(`${account} waiting`, async () => (await steps(id)).some((step) => step.name === "payment" && step.state === "awaiting"));
  expect((await api("POST", "/v1/events", { event: "invoice.paid", key: account, payload: { plan: "pro" } })).json.jobIds).toEqual([id]);
  await waitFor(`${account} asleep`, async () => (await steps(id)).some((step) => step.name === "cool-off" && step.state === "asleep"));
  return id;
}

/** Open a job's page and wait until its steps were read and drawn. */
async function openJob(on: Page, id: string): Promise<void> {
  const read = on.waitForResponse((response) => response.url().endsWith(`/v1/jobs/${id}/steps`));
  await on.goto(`${server.url}/#/jobs/${id}`);
  await on.getByTestId("timeline").waitFor();
  await read;
  // Preact draws what the answer set before the next frame. (The tests compile without the DOM's types.)
  await on.evaluate(() => new Promise((resolve) => (globalThis as any).requestAnimationFrame(() => (globalThis as any).requestAnimationFrame(resolve))));
}

describe.skipIf(!available)("a durable job's page in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
    test = await createTestConveyor({ jobs: [trial, plain], logger: silent });
    adminKey = (await test.conveyor.apiKeys.create({ admin: true, name: "durable browser test" })).key;
    server = await startApiServer(test.conveyor, { port: 0, logger: silent });
    const worker = test.conveyor.worker({ pollIntervalMs: 50, wakeIntervalMs: 50, logger: silent });
    await worker.start();
    try {
      jobs.wide = await sleepingTrial("acct_wide");
      jobs.narrow = await sleepingTrial("acct_narrow");
      jobs.plain = (await test.conveyor.enqueue(plain, {})).id;
      await test.conveyor.waitFor(jobs.plain, { timeoutMs: 20_000 });
    } finally {
      // No worker from here on: a job queued again stays queued, its forgotten records stay gone.
      await worker.stop();
    }
    ({ browser, context, page } = await openBrowserPage(browserErrors));
    await page.goto(`${server.url}/#key=${adminKey}`);
    await page.getByRole("button", { name: "Sign out" }).waitFor();
  }, 120_000);

  afterAll(async () => {
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.close();
    await test?.cleanup();
  });

  it("shows each step, the wait's event and the sleep's wake time, results as text", async () => {
    await openJob(page, jobs.wide);
    expect(await page.locator("[data-testid=job-page] h1 [data-testid=status]").textContent()).toBe("sleeping");
    expect(await stepRows(page)).toEqual(["create-account completed", "payment received", "cool-off asleep"]);
    const detail = (name: string) => page.locator(`[data-step="${name}"] [data-testid=step-detail]`);
    // The step's result, cut to one line: the markup in it is text, and no element was made of it.
    expect(await detail("create-account").textContent()).toContain('"note":"<img');
    expect(await page.locator("[data-testid=job-steps] img").count()).toBe(0);
    const wait = await detail("payment").textContent();
    expect(wait).toContain("event invoice.paid key acct_wide");
    expect(await detail("payment").getByTestId("step-deadline").textContent()).toMatch(/^deadline \d{4}-\d\d-\d\d \d\d:\d\d:\d\d /);
    expect(wait).toContain("received");
    expect(await detail("payment").getByTestId("step-result").textContent()).toBe('{"plan":"pro"}');
    expect(await detail("cool-off").getByTestId("step-wake").textContent()).toMatch(/^wakes \d{4}-\d\d-\d\d \d\d:\d\d:\d\d /);
    // The suspended attempts are in the timeline, not counted.
    expect(await page.locator("[data-testid=attempt] [data-testid=status]").allTextContents()).toEqual(["suspended", "suspended"]);
    await saveScreenshot(page, "80-job-steps");
  });

  it("reruns from a step after its confirmation: the job is queued again and the later records are gone", async () => {
    await openJob(page, jobs.wide);
    await page.locator('[data-step="payment"]').getByRole("button", { name: "Rerun from this step" }).click();
    const confirm = page.getByTestId("steps-confirm");
    expect(await confirm.getByTestId("steps-confirm-text").textContent()).toBe(
      "This forgets the record of payment and the 1 record after it, and queues the job: what it recorded before replays, payment and what follows run again.",
    );
    // Nothing happens until it is confirmed.
    expect((await api("GET", `/v1/jobs/${jobs.wide}`)).json.status).toBe("sleeping");
    await saveScreenshot(page, "81-job-steps-rerun-confirm");
    await confirm.getByRole("button", { name: "Rerun from payment" }).click();
    await poll(() => page.getByRole("status").textContent()).toBe('Queued to rerun from "payment".');
    await poll(() => stepRows(page)).toEqual(["create-account completed"]);
    await poll(() => page.locator("[data-testid=job-page] h1 [data-testid=status]").textContent()).toBe("queued");
    expect((await api("GET", `/v1/jobs/${jobs.wide}`)).json.status).toBe("queued");
    expect((await steps(jobs.wide)).map((step) => step.name)).toEqual(["create-account"]);

    // Resume, also after its confirmation, keeps every record.
    await page.getByRole("button", { name: "Resume", exact: true }).click();
    await page.getByTestId("steps-confirm").getByRole("button", { name: "Resume job" }).click();
    await poll(() => page.getByRole("status").textContent()).toBe("Resumed: the job is queued and replays its recorded steps.");
    expect((await steps(jobs.wide)).map((step) => step.name)).toEqual(["create-account"]);
    // The timeline names both, after the attempts before them.
    const requeues = page.locator("[data-testid=timeline] [data-testid=requeue] .requeue-what");
    await poll(() => requeues.allTextContents()).toEqual(["Rerun from step “payment”", "Resumed"]);
    expect(await page.locator("[data-testid=timeline] li").evaluateAll((items) => items.map((item) => item.getAttribute("data-testid")))).toEqual([
      "attempt",
      "attempt",
      "requeue",
      "requeue",
    ]);
    expect(await page.locator("[data-testid=attempt] .attempt-number").allTextContents()).toEqual(["Run 1, attempt 1", "Run 1, attempt 1"]);
    await saveScreenshot(page, "82-job-steps-after-rerun");
  });

  it("shows no steps section for a job without records", async () => {
    await openJob(page, jobs.plain);
    expect(await page.getByRole("heading", { name: "Steps" }).count()).toBe(0);
    expect(await page.getByTestId("job-steps").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Resume", exact: true }).count()).toBe(0);
  });

  it("fits a 390 px wide screen, and reruns from there", async () => {
    const narrow = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const phone = await narrow.newPage();
    phone.setDefaultTimeout(20_000);
    phone.on("pageerror", (error) => browserErrors.push(error.message));
    try {
      await phone.goto(`${server.url}/#key=${adminKey}`);
      await phone.getByRole("button", { name: "Sign out" }).waitFor();
      await openJob(phone, jobs.narrow);
      expect(await stepRows(phone)).toEqual(["create-account completed", "payment received", "cool-off asleep"]);
      expect(await phone.evaluate<number>("document.scrollingElement.scrollWidth")).toBeLessThanOrEqual(390);
      await saveScreenshot(phone, "83-narrow-job-steps");
      await phone.locator('[data-step="cool-off"]').getByRole("button", { name: "Rerun from this step" }).click();
      await phone.getByTestId("steps-confirm").waitFor();
      expect(await phone.evaluate<number>("document.scrollingElement.scrollWidth")).toBeLessThanOrEqual(390);
      await saveScreenshot(phone, "84-narrow-job-steps-confirm");
      await phone.getByTestId("steps-confirm").getByRole("button", { name: "Rerun from cool-off" }).click();
      await poll(() => stepRows(phone)).toEqual(["create-account completed", "payment received"]);
      expect((await api("GET", `/v1/jobs/${jobs.narrow}`)).json.status).toBe("queued");
    } finally {
      await narrow.close();
    }
    expect(browserErrors).toEqual([]);
  });
});
