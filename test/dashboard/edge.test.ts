/**
 * The dashboard at its edges, in real headless Chromium (as
 * browser.test.ts: an API server on a real port, this file's own schema),
 * at 1280 px and, where layout matters, 390 px: a tenant key's overview
 * calling only the routes the key may use, cancelling a flow only after a
 * confirmation that counts its jobs, the top errors and keys readable on a
 * phone, a bulk action that ended short saying what happened to the rest,
 * and "More filters" kept open while any of them is set; and at 390 px,
 * each of these readable in place.
 */
import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ApiServer, startApiServer } from "../../packages/http/src/server.js";
import { defineJob, PermanentError } from "../../packages/core/src/index.js";
import { jobsIn, tune } from "../bulk-actions-support.js";
import { runUntilFinished, silent } from "../cli/support.js";
import { apiRequest, chromiumAvailable, DASHBOARD_ARTIFACTS, openBrowserPage, refreshes, saveScreenshot } from "../helpers/browser.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";

const available = chromiumAvailable("the dashboard edge tests");

/** A message long enough, with a token without spaces, to overflow a phone's width unless it wraps. */
const LONG_ERROR =
  "certificate chain for https://payments.gateway.example.com/v2/charges/ch_3NfQ9x2eZvKYlo2C0a1b2c3d4e5f6g7h8i9j0 could not be verified";
const LONG_KEY = "tenant-4711.webhooks.customer-endpoint.eu-central-1.hooks.example.com";

const flaky = defineJob({
  kind: "invoice.send",
  schema: z.object({ n: z.number().int() }),
  maxAttempts: 1,
  handler: () => {
    throw new PermanentError(LONG_ERROR);
  },
});
const item = defineJob({ kind: "item", schema: z.object({ n: z.number().int() }), handler: async () => {} });
const step = defineJob({ kind: "step", schema: z.object({ n: z.number() }), handler: async () => {} });

let test: TestConveyor;
let server: ApiServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const keys = { admin: "", acme: "" };
const browserErrors: string[] = [];

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

/**
 * Every cell of the tables under `selector` whose content runs past the
 * cell or past the screen: "row/cell: why". Empty when all of it is
 * readable in place.
 */
// The functions passed to evaluate run in the page; the tests compile without the DOM's types, so they read it as `any`.
function overflowingCells(on: Page, selector: string): Promise<string[]> {
  return on.locator(selector).evaluateAll((tables: any[]) => {
    const width: number = (globalThis as any).document.documentElement.clientWidth;
    const found: string[] = [];
    tables.forEach((table, t) => {
      table.querySelectorAll("td").forEach((cell: any, c: number) => {
        const box = cell.getBoundingClientRect();
        if (box.right > width + 0.5 || box.left < -0.5) found.push(`${t}/${c}: cell spans ${box.left}..${box.right} of ${width}`);
        if (cell.scrollWidth > cell.clientWidth + 1) found.push(`${t}/${c}: content ${cell.scrollWidth} wider than its cell ${cell.clientWidth}`);
        for (const inner of Array.from<any>(cell.querySelectorAll("*"))) {
          const own = inner.getBoundingClientRect();
          if (own.right > Math.min(box.right, width) + 0.5) found.push(`${t}/${c}: ${inner.tagName} ends at ${own.right}, past ${Math.min(box.right, width)}`);
        }
      });
    });
    return found;
  });
}

/**
 * A cancel over 30 queued jobs of `queue`, walked 5 at a time, while a
 * caller cancels the last 20 itself: it ends touching 10 of 30. Its id.
 */
async function shortBulkCancel(queue: string): Promise<string> {
  tune(test.conveyor, { batchSize: 5, pauseMs: 1_000 }); // a second between batches: the caller's cancels land long before the third
  const ids = await jobsIn(test.conveyor, "queued", 30, { kind: "item", queue });
  const started = await api("POST", "/v1/bulk-actions", { action: "cancel", filter: { queue } });
  expect(started.status).toBe(202);
  await Promise.all(ids.slice(10).map((id) => test.conveyor.cancel(id)));
  await poll(async () => (await api("GET", `/v1/bulk-actions/${started.json.id}`)).json.status).toBe("succeeded");
  const ended = (await api("GET", `/v1/bulk-actions/${started.json.id}`)).json;
  expect({ total: ended.total, touched: ended.touched }).toEqual({ total: 30, touched: 10 });
  tune(test.conveyor, { batchSize: 1000, pauseMs: 0 });
  return started.json.id;
}

/** Whether `target` can be read in place on a phone: scrolled into view, it lies within the screen and its text within its box. */
async function readableOnPhone(target: Locator): Promise<string[]> {
  await target.scrollIntoViewIfNeeded();
  return target.evaluate((element: any) => {
    const width: number = (globalThis as any).document.documentElement.clientWidth;
    const box = element.getBoundingClientRect();
    const found: string[] = [];
    if (box.width === 0 || box.height === 0) found.push("not shown");
    if (box.left < -0.5 || box.right > width + 0.5) found.push(`spans ${box.left}..${box.right} of ${width}`);
    if (element.scrollWidth > element.clientWidth + 1) found.push(`text ${element.scrollWidth} wider than its box ${element.clientWidth}`);
    return found;
  });
}

describe.skipIf(!available)("the dashboard's edges in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
    test = await createTestConveyor({ jobs: [flaky, item, step], logger: silent });
    keys.admin = (await test.conveyor.apiKeys.create({ admin: true, name: "edge test" })).key;
    keys.acme = (await test.conveyor.apiKeys.create({ tenant: "acme" })).key;
    // Two failures with a long message, for the top errors (one of them acme's).
    await test.conveyor.enqueueMany([
      { job: "invoice.send", payload: { n: 1 } },
      { job: "invoice.send", payload: { n: 2 }, tenant: "acme" },
    ]);
    await runUntilFinished(test.conveyor, ["invoice.send"]);
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

  it("calls only the routes a tenant key may use on its overview, and shows an admin key its limits per key", async () => {
    expect((await api("PATCH", "/v1/queues/keyed/key-limits", { concurrency: 2 })).status).toBe(200);
    await test.conveyor.enqueueMany([{ job: "item", payload: { n: 1 }, queue: "keyed", limitKey: LONG_KEY, delayMs: 3_600_000 }]);

    const tenantPage = await context.newPage();
    tenantPage.setDefaultTimeout(20_000);
    tenantPage.on("pageerror", (error) => browserErrors.push(error.message));
    const refused: string[] = [];
    const consoleErrors: string[] = [];
    const calls: string[] = [];
    tenantPage.on("response", (response) => {
      if (response.status() >= 400) refused.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    tenantPage.on("request", (request) => calls.push(new URL(request.url()).pathname));
    tenantPage.on("console", (message) => {
      if (message.type() === "error") consoleErrors.push(message.text());
    });
    try {
      await signIn(tenantPage, keys.acme);
      await tenantPage.goto(`${server.url}/#/`);
      await tenantPage.getByTestId("top-errors").locator("tbody tr").first().waitFor();
      // Once the key's role is known, two rounds of the slow refresh (5 s), which is where limits per key are read.
      await refreshes(tenantPage, "me", 1, 0);
      await refreshes(tenantPage, "overview-slow", 2);
      expect(refused).toEqual([]);
      expect(consoleErrors).toEqual([]);
      expect(calls.filter((path) => path.includes("key-limits") || path.includes("/keys"))).toEqual([]);
      expect(calls).toContain("/v1/me");
      expect(await tenantPage.getByTestId("key-limits").count()).toBe(0);
      await screenshot("60-tenant-overview", tenantPage);
    } finally {
      await tenantPage.close();
    }

    // The admin key reads them, and sees them.
    await page.goto(`${server.url}/#/`);
    await poll(() => page.locator(`[data-testid=key-limits][data-queue=keyed] tr[data-key="${LONG_KEY}"] td`).first().textContent()).toBe(LONG_KEY);
  });

  it("cancels a flow only after a confirmation that says how many jobs it cancels", async () => {
    const created = await api("POST", "/v1/flows", {
      name: "order 2002",
      jobs: {
        charge: { kind: "step", payload: { n: 1 }, delayMs: 600_000 },
        reserve: { kind: "step", payload: { n: 2 }, delayMs: 600_000 },
        ship: { kind: "step", payload: { n: 3 }, dependsOn: ["charge", "reserve"] },
      },
    });
    expect(created.status).toBe(201);
    const flowId: string = created.json.id;
    const statuses = async () => (await api("GET", `/v1/flows/${flowId}`)).json.jobs.map((entry: any) => entry.job.status).sort();

    await page.goto(`${server.url}/#/flows/${flowId}`);
    await page.getByTestId("flow-page").waitFor();
    await page.getByRole("button", { name: "Cancel flow…" }).click();
    const confirm = page.getByTestId("cancel-flow-confirm");
    await poll(() => confirm.getByTestId("cancel-flow-count").textContent()).toBe(
      "This cancels its 3 jobs that have not ended: 1 waiting, 2 queued.",
    );
    await screenshot("61-cancel-flow-confirm");
    // Nothing is cancelled by opening it, nor by keeping them.
    await confirm.getByRole("button", { name: "Keep them" }).click();
    expect(await confirm.count()).toBe(0);
    expect(await statuses()).toEqual(["queued", "queued", "waiting"]);

    await page.getByRole("button", { name: "Cancel flow…" }).click();
    await page.getByTestId("cancel-flow-confirm").getByRole("button", { name: "Cancel 3 jobs" }).click();
    await poll(() => page.getByRole("status").first().textContent()).toBe("Cancelled 3 job(s).");
    expect(await statuses()).toEqual(["cancelled", "cancelled", "cancelled"]);

    // At 390 px the confirmation fits the screen.
    const other = await api("POST", "/v1/flows", { jobs: { a: { kind: "step", payload: { n: 1 }, delayMs: 600_000 } } });
    const { narrow, phonePage } = await phone(keys.admin);
    try {
      await phonePage.goto(`${server.url}/#/flows/${other.json.id}`);
      await phonePage.getByRole("button", { name: "Cancel flow…" }).click();
      await phonePage.getByTestId("cancel-flow-confirm").waitFor();
      expect(await phonePage.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await screenshot("62-narrow-cancel-flow-confirm", phonePage);
    } finally {
      await narrow.close();
    }
  });

  it("shows the top errors and the busiest keys readable at 390 px: nothing runs past its cell or the screen", async () => {
    const { narrow, phonePage } = await phone(keys.admin);
    try {
      await phonePage.goto(`${server.url}/#/`);
      await phonePage.getByTestId("top-errors").locator("tbody tr").first().waitFor();
      await phonePage.locator(`[data-testid=key-limits] tr[data-key="${LONG_KEY}"]`).waitFor();
      await phonePage.waitForLoadState("networkidle");
      expect(await overflowingCells(phonePage, "[data-testid=top-errors] table")).toEqual([]);
      expect(await overflowingCells(phonePage, "[data-testid=key-limits] table")).toEqual([]);
      // Each value keeps its label beside it.
      const label = await phonePage
        .getByTestId("top-errors")
        .locator("td[data-label=Attempts]")
        .first()
        .evaluate((cell) => (globalThis as any).getComputedStyle(cell, "::before").content as string);
      expect(label).toBe('"Attempts"');
      expect(await phonePage.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await screenshot("63-narrow-overview-tables", phonePage);
    } finally {
      await narrow.close();
    }
    // At 1280 px they stay tables, one row per error.
    await page.goto(`${server.url}/#/`);
    const head = page.getByTestId("top-errors").locator("thead");
    await head.waitFor();
    expect(await head.isVisible()).toBe(true);
    expect(await overflowingCells(page, "[data-testid=top-errors] table")).toEqual([]);
  });

  it("says what happened to the jobs a bulk action did not touch, instead of a short count", async () => {
    const operation = await shortBulkCancel("exports");

    await page.goto(`${server.url}/#/bulk-actions`);
    const row = page.locator(`[data-testid=bulk-actions] tr[data-operation-id="${operation}"]`);
    await poll(() => row.getByTestId("touched").textContent()).toBe("10 cancelled, 20 already moved on");
    expect(await row.getByTestId("touched").getAttribute("title")).toBe(
      "10 cancelled; the other 20 were no longer waiting, queued, retrying, sleeping or running when it reached them " +
        "(run by workers, or changed by other actions or callers meanwhile): nothing failed.",
    );
    await screenshot("64-bulk-history-short");
    await row.getByRole("link").first().click();
    await poll(() => page.getByTestId("bulk-rest").textContent()).toMatch(/^10 cancelled; the other 20 were no longer waiting, queued, retrying, sleeping or running/);
  });

  it("cancels the rows ticked on the Jobs page after a confirmation; the head's box ticks the whole page", async () => {
    const queued = await jobsIn(test.conveyor, "queued", 4, { kind: "item", queue: "picked" });
    const [running] = await jobsIn(test.conveyor, "running", 1, { kind: "item", queue: "picked" });
    const [ended] = await jobsIn(test.conveyor, "succeeded", 1, { kind: "item", queue: "picked" });
    const statusOf = async (id: string) => (await api("GET", `/v1/jobs/${id}`)).json.status as string;
    await page.goto(`${server.url}/#/jobs?queue=picked`);
    await poll(() => page.locator("[data-testid=jobs] tbody tr").count()).toBe(6);

    await page.getByLabel(`select job ${queued[0]}`).check();
    await poll(() => page.getByTestId("selected-count").textContent()).toBe("1 selected");
    await page.getByLabel("select every job on this page").check();
    await poll(() => page.getByTestId("selected-count").textContent()).toBe("6 selected");
    // It stays ticked through the list's refreshes.
    await refreshes(page, "jobs", 2);
    expect(await page.getByTestId("selected-count").textContent()).toBe("6 selected");

    await page.getByRole("button", { name: "Cancel selected" }).click();
    const confirm = page.getByTestId("selection-confirm");
    expect(await confirm.getByTestId("selection-confirm-count").textContent()).toBe(
      "This cancels 5 jobs of the 6 selected; the running one is asked to stop at its worker's next heartbeat; 1 job already ended and is left as it is.",
    );
    // Nothing happens until it is confirmed.
    expect(await statusOf(queued[0]!)).toBe("queued");
    await screenshot("66-selection-confirm");
    await confirm.getByRole("button", { name: "Cancel 5 jobs" }).click();
    await poll(() => page.getByTestId("selection-outcome").textContent()).toBe("Cancelled 4 jobs; 1 job running asked to stop.");
    expect(await Promise.all(queued.map(statusOf))).toEqual(["cancelled", "cancelled", "cancelled", "cancelled"]);
    const stopping = (await api("GET", `/v1/jobs/${running}`)).json;
    expect({ status: stopping.status, cancelRequested: stopping.cancelRequested }).toEqual({ status: "running", cancelRequested: true });
    expect(await statusOf(ended!)).toBe("succeeded");
    expect(await page.getByTestId("selection-bar").count()).toBe(0);
    await poll(() => page.locator("[data-testid=jobs] tbody [data-testid=status]").allTextContents()).toEqual(
      expect.arrayContaining(["cancelled", "cancelled", "cancelled", "cancelled", "running", "succeeded"]),
    );

    // At 390 px: the bar and the confirmation fit the screen.
    const { narrow, phonePage } = await phone(keys.admin);
    try {
      await phonePage.goto(`${server.url}/#/jobs?queue=picked`);
      await phonePage.getByLabel("select every job on this page").check();
      await phonePage.getByRole("button", { name: "Cancel selected" }).click();
      await phonePage.getByTestId("selection-confirm").waitFor();
      expect(await phonePage.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await screenshot("67-narrow-selection", phonePage);
      await phonePage.getByRole("button", { name: "Keep them" }).click();
    } finally {
      await narrow.close();
    }
  });

  it("retries and purges the dead jobs ticked on the Jobs page, through their dead letters", async () => {
    const dead = await jobsIn(test.conveyor, "dead", 3, { kind: "item", queue: "graveyard" });
    const [alive] = await jobsIn(test.conveyor, "queued", 1, { kind: "item", queue: "graveyard" });
    const statusOf = async (id: string) => {
      const answer = await api("GET", `/v1/jobs/${id}`);
      return answer.status === 404 ? "gone" : (answer.json.status as string);
    };
    await page.goto(`${server.url}/#/jobs?queue=graveyard`);
    await poll(() => page.locator("[data-testid=jobs] tbody tr").count()).toBe(4);

    // Retry two of the dead and the queued one: only the dead are requeued.
    for (const id of [dead[0]!, dead[1]!, alive!]) await page.getByLabel(`select job ${id}`).check();
    await page.getByRole("button", { name: "Retry selected" }).click();
    expect(await page.getByTestId("selection-confirm-count").textContent()).toBe(
      "This puts 2 jobs of the 3 selected back in their queues from the dead-letter queue, with fresh attempts and their history kept; the other 1 job, not dead, is left as it is.",
    );
    await page.getByTestId("selection-confirm").getByRole("button", { name: "Retry 2 jobs" }).click();
    await poll(() => page.getByTestId("selection-outcome").textContent()).toBe("Requeued 2 jobs.");
    expect([await statusOf(dead[0]!), await statusOf(dead[1]!), await statusOf(alive!)]).toEqual(["queued", "queued", "queued"]);
    expect((await api("GET", "/v1/dead-letters?queue=graveyard")).json.items.map((entry: any) => entry.jobId)).toEqual([dead[2]]);

    // Purge the last dead one: gone, with its dead letter.
    await poll(() => page.locator(`tr[data-job-id="${dead[0]}"] [data-testid=status]`).textContent()).toBe("queued");
    await page.getByLabel(`select job ${dead[2]}`).check();
    expect(await page.getByRole("button", { name: "Retry selected" }).isEnabled()).toBe(true);
    await page.getByRole("button", { name: "Purge selected" }).click();
    expect(await page.getByTestId("selection-confirm-count").textContent()).toBe("This deletes 1 job of the 1 selected for good, with its history.");
    await screenshot("76-selection-purge-confirm");
    await page.getByTestId("selection-confirm").getByRole("button", { name: "Purge 1 job" }).click();
    await poll(() => page.getByTestId("selection-outcome").textContent()).toBe("Purged 1 job.");
    expect(await statusOf(dead[2]!)).toBe("gone");
    expect((await api("GET", "/v1/dead-letters?queue=graveyard")).json.items).toEqual([]);
    // Nothing dead is selected: retry and purge are not offered.
    await page.getByLabel("select every job on this page").check();
    expect(await page.getByRole("button", { name: "Purge selected" }).isDisabled()).toBe(true);
    expect(await page.getByRole("button", { name: "Retry selected" }).isDisabled()).toBe(true);
  });

  it("shows each job's priority, and tells scheduled jobs from queued ones with their run time", async () => {
    const later = await api("POST", "/v1/jobs", { kind: "item", queue: "timed", payload: { n: 1 }, priority: -5, delayMs: 3_600_000 });
    const now = await api("POST", "/v1/jobs", { kind: "item", queue: "timed", payload: { n: 2 }, priority: 3 });
    expect([later.status, now.status]).toEqual([201, 201]);
    await page.goto(`${server.url}/#/jobs?queue=timed`);
    const scheduledRow = page.locator(`tr[data-job-id="${later.json.id}"]`);
    const dueRow = page.locator(`tr[data-job-id="${now.json.id}"]`);
    await scheduledRow.waitFor();
    expect(await page.locator("[data-testid=jobs] thead th").allTextContents()).toContain("Priority");
    expect(await scheduledRow.getByTestId("priority").textContent()).toBe("-5");
    expect(await dueRow.getByTestId("priority").textContent()).toBe("3");
    expect(await scheduledRow.getByTestId("status").textContent()).toBe("queued");
    expect(await scheduledRow.getByTestId("scheduled").textContent()).toBe("scheduled");
    expect(await scheduledRow.getByTestId("run-at").textContent()).toMatch(/^runs in (59 min \d+ s|1 h 0 min)$/);
    const runAt = new Date(later.json.runAt);
    const pad = (n: number) => String(n).padStart(2, "0");
    // The run time in full, in the browser's zone (its seconds are the same in every zone).
    expect(await scheduledRow.getByTestId("run-at").getAttribute("title")).toMatch(
      new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:${pad(runAt.getUTCSeconds())} UTC`),
    );
    expect(await dueRow.getByTestId("scheduled").count()).toBe(0);
    expect(await dueRow.getByTestId("run-at").count()).toBe(0);
    await screenshot("68-jobs-priority-scheduled");

    // The job's own page says so too.
    await scheduledRow.locator("a[href^='#/jobs/']").click();
    await page.getByTestId("job-page").waitFor();
    expect(await page.locator("[data-testid=job-page] [data-testid=scheduled]").textContent()).toBe("scheduled");
    await screenshot("68b-job-scheduled");
  });

  it("pauses and resumes a queue from the overview's queues, for admin keys only", async () => {
    await jobsIn(test.conveyor, "queued", 1, { kind: "item", queue: "mail" });
    const pausedOf = async () => (await api("GET", "/v1/queues")).json.items.find((queue: any) => queue.queue === "mail").paused as boolean;
    await page.goto(`${server.url}/#/`);
    const row = page.locator("[data-testid=queues] tr[data-queue=mail]");
    await row.getByRole("button", { name: "pause queue mail" }).click();
    await poll(pausedOf).toBe(true);
    await poll(() => row.getByTestId("limits").textContent()).toBe("paused");
    await poll(() => row.getByTestId("queue-control").textContent()).toBe("Resume");
    await screenshot("69-queue-paused");
    await row.getByRole("button", { name: "resume queue mail" }).click();
    await poll(pausedOf).toBe(false);
    await poll(() => row.getByTestId("limits").textContent()).toBe("none");
    await poll(() => row.getByTestId("queue-control").textContent()).toBe("Pause");

    // A tenant key is not offered what the API would refuse it (403).
    const tenantPage = await context.newPage();
    try {
      await signIn(tenantPage, keys.acme);
      await tenantPage.goto(`${server.url}/#/`);
      await tenantPage.getByTestId("queues").waitFor();
      await refreshes(tenantPage, "me", 1, 0); // the key's role is known
      expect(await tenantPage.getByTestId("queue-control").count()).toBe(0);
    } finally {
      await tenantPage.close();
    }
  });

  it("shows each flow's state on the flow list", async () => {
    const make = async (name: string) =>
      (
        await api("POST", "/v1/flows", {
          name,
          jobs: { a: { kind: "step", payload: { n: 1 }, delayMs: 600_000 }, b: { kind: "step", payload: { n: 2 }, dependsOn: ["a"] } },
        })
      ).json;
    const pending = await make("state pending");
    const cancelled = await make("state cancelled");
    expect((await api("POST", `/v1/flows/${cancelled.id}/cancel`)).status).toBe(200);
    const done = await make("state succeeded");
    // Both jobs of this one succeed: its first is made due, and a worker runs it and then the second.
    await test.conveyor.pool.query(`UPDATE "${test.schema}".jobs SET run_at = now() WHERE id = $1`, [done.jobs.a.id]);
    const worker = test.conveyor.worker({ kinds: ["step"], pollIntervalMs: 50, logger: silent });
    await worker.start();
    try {
      await poll(async () => (await api("GET", `/v1/flows/${done.id}`)).json.counts.succeeded).toBe(2);
    } finally {
      await worker.stop();
    }

    await page.goto(`${server.url}/#/flows`);
    const cells = (id: string) =>
      Promise.all([
        page.locator(`tr[data-flow-id="${id}"] [data-testid=flow-state]`).textContent(),
        page.locator(`tr[data-flow-id="${id}"] [data-testid=flow-progress]`).textContent(),
      ]);
    await poll(() => cells(done.id)).toEqual(["succeeded", "2 / 2 ended"]);
    expect(await cells(pending.id)).toEqual(["pending", "0 / 2 ended"]);
    expect(await cells(cancelled.id)).toEqual(["cancelled", "2 / 2 ended"]);
    expect(await page.locator(`tr[data-flow-id="${pending.id}"] [data-testid=flow-progress]`).getAttribute("title")).toBe("1 waiting, 1 queued");
    await screenshot("70-flow-states");
    const { narrow, phonePage } = await phone(keys.admin);
    try {
      await phonePage.goto(`${server.url}/#/flows`);
      await phonePage.locator(`tr[data-flow-id="${done.id}"]`).waitFor();
      expect(await phonePage.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    } finally {
      await narrow.close();
    }
  });

  it("draws a flow's graph as SVG: a row per level, an arrow from each job to each job waiting on it", async () => {
    const created = await api("POST", "/v1/flows", {
      name: "diamond",
      jobs: {
        fetch: { kind: "step", payload: { n: 1 }, delayMs: 600_000 },
        resize: { kind: "step", payload: { n: 2 }, dependsOn: ["fetch"] },
        scan: { kind: "step", payload: { n: 3 }, dependsOn: ["fetch"] },
        publish: { kind: "step", payload: { n: 4 }, dependsOn: ["resize", "scan"] },
      },
    });
    expect(created.status).toBe(201);
    const check = async (on: Page) => {
      await on.goto(`${server.url}/#/flows/${created.json.id}`);
      const svg = on.locator("svg[data-testid=flow-graph]");
      await svg.waitFor();
      // Where each node is drawn and where each edge starts and ends, in the SVG's coordinates.
      const drawn = await svg.evaluate((element: any) => {
        const boxes: Record<string, { x: number; y: number; width: number; height: number }> = {};
        for (const node of Array.from<any>(element.querySelectorAll("[data-testid=flow-node]"))) {
          const box = node.querySelector("rect").getBBox();
          const [x, y] = (node.getAttribute("transform") ?? "").match(/-?[\d.]+/g)!.map(Number);
          boxes[node.getAttribute("data-node")] = { x: x! + box.x, y: y! + box.y, width: box.width, height: box.height };
        }
        const edges = Array.from<any>(element.querySelectorAll("[data-testid=flow-edge]")).map((path) => {
          const start = path.getPointAtLength(0);
          const end = path.getPointAtLength(path.getTotalLength());
          return { from: path.getAttribute("data-from") as string, to: path.getAttribute("data-to") as string, start: [start.x, start.y] as number[], end: [end.x, end.y] as number[] };
        });
        return { boxes, edges };
      });
      const { boxes, edges } = drawn;
      expect(boxes.fetch!.y).toBeLessThan(boxes.resize!.y);
      expect(boxes.resize!.y).toBe(boxes.scan!.y);
      expect(boxes.scan!.y).toBeLessThan(boxes.publish!.y);
      expect(edges.map((edge) => `${edge.from}->${edge.to}`).sort()).toEqual(["fetch->resize", "fetch->scan", "resize->publish", "scan->publish"]);
      for (const edge of edges) {
        const from = boxes[edge.from]!;
        const to = boxes[edge.to]!;
        // From the parent's bottom edge to the child's top edge.
        expect(edge.start[1]).toBeCloseTo(from.y + from.height, 0);
        expect(edge.start[0]).toBeGreaterThanOrEqual(from.x);
        expect(edge.start[0]).toBeLessThanOrEqual(from.x + from.width);
        expect(edge.end[1]).toBeCloseTo(to.y, 0);
        expect(edge.end[0]).toBeGreaterThanOrEqual(to.x);
        expect(edge.end[0]).toBeLessThanOrEqual(to.x + to.width);
      }
      expect(await on.locator("[data-node=publish] [data-testid=status]").textContent()).toBe("waiting");
      expect(await on.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(on.viewportSize()!.width);
    };
    await check(page);
    await screenshot("71-flow-graph");
    const { narrow, phonePage } = await phone(keys.admin);
    try {
      await check(phonePage);
      await screenshot("72-narrow-flow-graph", phonePage);
    } finally {
      await narrow.close();
    }
    // A node opens its job.
    await page.locator("[data-node=scan] a").click();
    await poll(() => page.evaluate<string>("window.location.hash")).toBe(`#/jobs/${created.json.jobs.scan.id}`);
  });

  it("gives limits per key a page of their own: defaults, overrides, busiest keys and why a key waits", async () => {
    expect((await api("PATCH", "/v1/queues/keyed/keys/hooks.fragile.example/limits", { concurrency: 1 })).status).toBe(200);
    await page.goto(`${server.url}/#/`);
    await page.getByRole("link", { name: "Limits per key", exact: true }).click();
    const queue = page.locator("[data-testid=key-queue][data-queue=keyed]");
    await poll(() => queue.getByTestId("key-default").textContent()).toMatch(/^Every key: 2 at once \(set .* ago\)$/);
    expect(await queue.locator("[data-testid=key-overrides] tr[data-key='hooks.fragile.example'] td").allTextContents()).toEqual([
      "hooks.fragile.example",
      "1 at once",
      expect.stringMatching(/ ago$/),
    ]);
    expect(await queue.locator(`[data-testid=key-limits] tr[data-key="${LONG_KEY}"] td`).allTextContents()).toEqual([LONG_KEY, "1", "0", "2 at once"]);
    await queue.getByLabel("Why is a key waiting?").fill(LONG_KEY);
    await queue.getByRole("button", { name: "Look up" }).click();
    await poll(() => queue.getByTestId("key-status").locator("[data-testid=status]").textContent()).toBe("scheduled");
    expect(await queue.getByTestId("key-reason").textContent()).not.toBe("");
    await screenshot("73-key-limits-page");

    const { narrow, phonePage } = await phone(keys.admin);
    try {
      await phonePage.goto(`${server.url}/#/key-limits`);
      await phonePage.locator("[data-testid=key-overrides]").waitFor();
      await phonePage.waitForLoadState("networkidle");
      expect(await overflowingCells(phonePage, "[data-testid=key-limits-page] table")).toEqual([]);
      expect(await phonePage.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await screenshot("74-narrow-key-limits-page", phonePage);
    } finally {
      await narrow.close();
    }

    // A tenant key is not offered the page, and opening it calls nothing it may not.
    const tenantPage = await context.newPage();
    const refused: string[] = [];
    tenantPage.on("response", (response) => {
      if (response.status() >= 400) refused.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    try {
      await signIn(tenantPage, keys.acme);
      await refreshes(tenantPage, "me", 1, 0); // the key's role is known
      expect(await tenantPage.getByRole("link", { name: "Limits per key", exact: true }).count()).toBe(0);
      await tenantPage.goto(`${server.url}/#/key-limits`);
      await tenantPage.getByTestId("admin-only").waitFor();
      await refreshes(tenantPage, "key-limits", 1, 0); // the page's load, answered
      expect(refused).toEqual([]);
    } finally {
      await tenantPage.close();
    }
  });

  it("keeps each row's name in view while a wide table scrolls sideways at 390 px", async () => {
    const { narrow, phonePage } = await phone(keys.admin);
    try {
      // Where the naming cells of a table's first row are, before and after its box scrolls to the end.
      const scrolled = async (table: string, cells: number) => {
        const wrap = phonePage.locator(`${table}`).locator("xpath=..");
        const lefts = () =>
          phonePage.locator(`${table} tbody tr`).first().evaluate(
            (row: any, count: number) => Array.from<any>(row.children).slice(0, count + 1).map((cell) => Math.round(cell.getBoundingClientRect().left)),
            cells,
          );
        const before = await lefts();
        const moved = await wrap.evaluate((box: any) => {
          box.scrollLeft = box.scrollWidth;
          return box.scrollLeft as number;
        });
        await phonePage.waitForTimeout(100);
        return { before, after: await lefts(), moved };
      };
      await phonePage.goto(`${server.url}/#/`);
      await phonePage.locator("[data-testid=queues] tbody tr").first().waitFor();
      const queues = await scrolled("[data-testid=queues]", 1);
      expect(queues.moved).toBeGreaterThan(100);
      // The queue's name stays (within the table's 1 px border it no longer sits beside).
      expect(Math.abs(queues.after[0]! - queues.before[0]!)).toBeLessThanOrEqual(1);
      expect(queues.after[1]).toBeLessThan(queues.before[1]!); // the counts move under it

      await phonePage.goto(`${server.url}/#/jobs`);
      await phonePage.locator("[data-testid=jobs] tbody tr").first().waitFor();
      const jobs = await scrolled("[data-testid=jobs]", 2);
      expect(jobs.moved).toBeGreaterThan(100);
      // The box and the job stay.
      expect(Math.abs(jobs.after[0]! - jobs.before[0]!)).toBeLessThanOrEqual(1);
      expect(Math.abs(jobs.after[1]! - jobs.before[1]!)).toBeLessThanOrEqual(1);
      expect(jobs.after[2]).toBeLessThan(jobs.before[2]!);
      await screenshot("75-narrow-jobs-scrolled", phonePage);
    } finally {
      await narrow.close();
    }
  });

  it("keeps 'More filters' open whenever one of them is set, also after moving between searches", async () => {
    await page.goto(`${server.url}/#/jobs`);
    await page.getByTestId("match-count").waitFor();
    const details = page.locator("details.more-filters");
    expect(await details.getAttribute("open")).toBeNull();
    // Another search, in the same page (a link, a pasted URL, Back): its error text must show.
    await page.evaluate("window.location.hash = '#/jobs?error=certificate'");
    await poll(() => details.getAttribute("open")).not.toBeNull();
    expect(await page.getByLabel("Error text").inputValue()).toBe("certificate");
    expect(await page.getByTestId("more-filters-set").textContent()).toBe(" (1 set: Error text)");
    await page.goBack();
    await poll(() => page.evaluate<string>("window.location.hash")).toBe("#/jobs");
    await page.goForward();
    await poll(() => page.getByLabel("Error text").inputValue()).toBe("certificate");
    expect(await details.getAttribute("open")).not.toBeNull();
    await screenshot("65-more-filters-kept-open");
    expect(browserErrors).toEqual([]);
  });

  it("at 390 px: priority, scheduled run time, the pause button, a short bulk action's outcome and set 'More filters' are readable", async () => {
    const scheduled = await api("POST", "/v1/jobs", { kind: "item", queue: "phone-timed", payload: { n: 1 }, priority: -5, delayMs: 3_600_000 });
    expect(scheduled.status).toBe(201);
    await jobsIn(test.conveyor, "queued", 1, { kind: "item", queue: "phone-mail" });
    const operation = await shortBulkCancel("phone-exports");
    const { narrow, phonePage } = await phone(keys.admin);
    const fitsScreen = async () => expect(await phonePage.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
    try {
      await phonePage.goto(`${server.url}/#/jobs?queue=phone-timed`);
      const row = phonePage.locator(`tr[data-job-id="${scheduled.json.id}"]`);
      await row.waitFor();
      for (const cell of ["priority", "scheduled", "run-at"]) expect(await readableOnPhone(row.getByTestId(cell)), cell).toEqual([]);
      expect(await row.getByTestId("priority").textContent()).toBe("-5");
      await fitsScreen();
      await screenshot("77-narrow-priority-scheduled", phonePage);

      await phonePage.goto(`${server.url}/#/`);
      const queue = phonePage.locator("[data-testid=queues] tr[data-queue=phone-mail]");
      const pause = queue.getByRole("button", { name: "pause queue phone-mail" });
      await pause.waitFor();
      expect(await readableOnPhone(pause)).toEqual([]);
      await pause.tap();
      const resume = queue.getByRole("button", { name: "resume queue phone-mail" });
      await resume.waitFor();
      expect(await readableOnPhone(resume)).toEqual([]);
      await fitsScreen();
      await screenshot("78-narrow-queue-paused", phonePage);
      await resume.tap();
      await pause.waitFor();

      await phonePage.goto(`${server.url}/#/bulk-actions`);
      const touched = phonePage.locator(`[data-testid=bulk-actions] tr[data-operation-id="${operation}"] [data-testid=touched]`);
      await poll(() => touched.textContent()).toBe("10 cancelled, 20 already moved on");
      expect(await readableOnPhone(touched)).toEqual([]);
      await fitsScreen();
      await phonePage.locator(`[data-testid=bulk-actions] tr[data-operation-id="${operation}"]`).getByRole("link").first().tap();
      const rest = phonePage.getByTestId("bulk-rest");
      await rest.waitFor();
      expect(await readableOnPhone(rest)).toEqual([]);
      await fitsScreen();
      await screenshot("79-narrow-bulk-short", phonePage);

      await phonePage.goto(`${server.url}/#/jobs`);
      await phonePage.getByTestId("match-count").waitFor();
      await phonePage.evaluate("window.location.hash = '#/jobs?error=certificate'");
      await poll(() => phonePage.locator("details.more-filters").getAttribute("open")).not.toBeNull();
      expect(await readableOnPhone(phonePage.getByLabel("Error text"))).toEqual([]);
      expect(await readableOnPhone(phonePage.getByTestId("more-filters-set"))).toEqual([]);
      await fitsScreen();
      await screenshot("80-narrow-more-filters", phonePage);
    } finally {
      await narrow.close();
    }
    expect(browserErrors).toEqual([]);
  });
});
