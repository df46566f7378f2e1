/**
 * The dashboard's pages for operating at scale, in real headless Chromium
 * (as browser.test.ts: an API server on a real port, this file's own
 * schema): searching by payload and error text with the match count and
 * the search kept in the URL, a bulk retry of dead jobs followed to its end
 * on a progress bar (and named on a retried job's timeline), a tenant key's bulk action kept to its own tenant, the
 * overview's parts (a job past its lease, a top error linking to its
 * search), and every new page at 390 px. Screenshots go to
 * test-artifacts/dashboard/.
 */
import { mkdirSync } from "node:fs";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { apiRequest, chromiumAvailable, DASHBOARD_ARTIFACTS, openBrowserPage, saveScreenshot } from "../helpers/browser.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ApiServer, startApiServer } from "../../packages/http/src/server.js";
import { defineJob, PermanentError } from "../../packages/core/src/index.js";
import { jobsIn, tune } from "../bulk-actions-support.js";
import { runUntilFinished, silent } from "../cli/support.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { sql } from "../worker/support.js";

const available = chromiumAvailable("the dashboard operations tests");

/** Succeeds, except plan "broken" (an error naming the customer) and plan "flaky" (one message shared by several jobs). */
const invoice = defineJob({
  kind: "invoice.send",
  schema: z.object({ customerId: z.number().int(), plan: z.string() }),
  maxAttempts: 1,
  handler: ({ payload }) => {
    if (payload.plan === "broken") throw new PermanentError(`gateway refused customer ${payload.customerId}`);
    if (payload.plan === "flaky") throw new PermanentError("upstream timeout");
  },
});
/** The jobs bulk actions work on (made in SQL by jobsIn; never run here). */
const item = defineJob({ kind: "export.item", schema: z.object({ n: z.number().int() }), handler: async () => {} });
/** A job left running past its lease. */
const stuck = defineJob({ kind: "report.build", schema: z.object({ n: z.number().int() }), handler: async () => {} });

const DEAD_JOBS = 120;
const STUCK_WORKER = "worker-on-a-paused-host";

let test: TestConveyor;
let server: ApiServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const keys = { admin: "", adminId: "", acme: "" };
const browserErrors: string[] = [];
const ids = { customer42: [] as string[], broken43: "", flaky: [] as string[], stuck: "" };

const api = (method: string, path: string, body?: unknown, key = keys.admin) => apiRequest(server.url, key, method, path, body);

const screenshot = (name: string, on: Page = page) => saveScreenshot(on, name);

const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 100 });

/** The job ids listed on the Jobs page, sorted. */
const listedIds = (on: Page = page) => on.locator("[data-testid=jobs] tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-job-id")!).sort());

async function signIn(on: Page, key: string): Promise<void> {
  await on.goto(`${server.url}/`);
  const signOut = on.getByRole("button", { name: "Sign out" });
  if (await signOut.isVisible()) await signOut.click();
  await on.getByLabel("API key").fill(key);
  await on.getByRole("button", { name: "Sign in" }).click();
  await signOut.waitFor();
}

/**
 * Follow the progress view until its operation ends, reading the bar each
 * time: returns every (value, max) seen and the final status.
 */
async function followProgress(on: Page): Promise<{ seen: Array<[number, number]>; status: string }> {
  const view = on.getByTestId("bulk-progress");
  await view.waitFor();
  const seen: Array<[number, number]> = [];
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = (await view.getAttribute("data-status")) ?? "";
    const bar = view.getByTestId("bulk-progress-bar");
    if ((await bar.count()) > 0) {
      // An indeterminate bar (total unknown) has position -1.
      seen.push(await bar.evaluate((element) => {
        const progress = element as unknown as { position: number; value: number; max: number };
        return [progress.position === -1 ? -1 : progress.value, progress.max] as [number, number];
      }));
    }
    if (status !== "" && status !== "running") return { seen, status };
    if (Date.now() > deadline) throw new Error(`the bulk action was still ${status} after 60 s`);
    await on.waitForTimeout(100);
  }
}

describe.skipIf(!available)("the dashboard's search, bulk actions and overview in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
    test = await createTestConveyor({ jobs: [invoice, item, stuck], logger: silent });
    const apiKeys = test.conveyor.apiKeys;
    const admin = await apiKeys.create({ admin: true, name: "operations test" });
    keys.admin = admin.key;
    keys.adminId = admin.record.id;
    keys.acme = (await apiKeys.create({ tenant: "acme" })).key;

    // Invoices run once by a worker that then stops: two for customer 42, one refused for 43, three timing out.
    const jobs = await test.conveyor.enqueueMany([
      { job: "invoice.send", payload: { customerId: 41, plan: "pro" } },
      { job: "invoice.send", payload: { customerId: 42, plan: "pro" } },
      { job: "invoice.send", payload: { customerId: 42, plan: "basic" } },
      { job: "invoice.send", payload: { customerId: 43, plan: "broken" } },
      { job: "invoice.send", payload: { customerId: 44, plan: "broken" } },
      ...[50, 51, 52].map((customerId) => ({ job: "invoice.send", payload: { customerId, plan: "flaky" } })),
    ]);
    ids.customer42 = [jobs[1]!.id, jobs[2]!.id].sort();
    ids.broken43 = jobs[3]!.id;
    ids.flaky = jobs.slice(5).map((job) => job.id).sort();
    await runUntilFinished(test.conveyor, ["invoice.send"]);

    // After the worker stopped (its reclaimer would hand it back): a job whose worker stopped renewing its lease.
    ids.stuck = (await jobsIn(test.conveyor, "running", 1, { kind: "report.build", queue: "reports" }))[0]!;
    await sql(test.conveyor, "UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '2 minutes' WHERE id = $1", [ids.stuck]);
    await sql(test.conveyor, "INSERT INTO {{schema}}.workers (id, hostname, pid, queues, kinds, concurrency) VALUES ($1, 'host-7', 4242, NULL, '{report.build}', 4)", [
      STUCK_WORKER,
    ]);
    await sql(test.conveyor, "UPDATE {{schema}}.jobs SET locked_by = $2 WHERE id = $1", [ids.stuck, STUCK_WORKER]);

    server = await startApiServer(test.conveyor, { port: 0, logger: silent });
    ({ browser, context, page } = await openBrowserPage(browserErrors, { timezoneId: "Asia/Kolkata" }));
    await signIn(page, keys.admin);
  }, 120_000);

  afterAll(async () => {
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.close();
    await test?.cleanup();
  });

  it("finds jobs by payload and by error text, counts them, and keeps the search in the URL", async () => {
    await page.goto(`${server.url}/#/jobs`);
    await page.getByTestId("jobs").waitFor();
    expect(await page.locator("html").getAttribute("data-refresh-ms-jobs")).toBe("2000"); // unlike a payload search's, below
    await page.getByText("More filters").click();

    // A payload that is not JSON is named before anything is sent.
    await page.getByLabel("Payload contains (JSON)").fill("{customerId: 42}");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await poll(() => page.getByRole("alert").textContent()).toMatch(/^Payload contains \(JSON\): not JSON/);
    expect(new URL(page.url()).hash).toBe("#/jobs");

    await page.getByLabel("Payload contains (JSON)").fill('{"customerId": 42}');
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.waitForURL((url) => url.hash.includes("payload="));
    expect(new URLSearchParams(new URL(page.url()).hash.split("?")[1]).get("payload")).toBe('{"customerId": 42}');
    await poll(() => listedIds()).toEqual(ids.customer42);
    await poll(() => page.getByTestId("match-count").textContent()).toBe("2 jobs");
    await screenshot("40-search-payload");

    // Shared: the same URL in a fresh load shows the same search, its field filled in.
    await page.reload();
    await poll(() => listedIds()).toEqual(ids.customer42);
    expect(await page.getByLabel("Payload contains (JSON)").inputValue()).toBe('{"customerId": 42}');

    // A payload search is not repeated every 2 s (neither the list nor the count has a timer): a new match shows on Refresh.
    const later = await api("POST", "/v1/jobs", { kind: "invoice.send", payload: { customerId: 42, plan: "enterprise" }, delayMs: 3_600_000 });
    expect(later.status).toBe(201);
    expect(await page.locator("html").getAttribute("data-refresh-ms-jobs")).toBeNull();
    expect(await page.locator("html").getAttribute("data-refresh-ms-jobs-count")).toBeNull();
    expect(await listedIds()).toEqual(ids.customer42);
    await page.getByRole("button", { name: "Refresh" }).click();
    await poll(() => listedIds()).toEqual([...ids.customer42, later.json.id].sort());
    await poll(() => page.getByTestId("match-count").textContent()).toBe("3 jobs");

    // Error text, case-insensitive, with the payload cleared.
    await page.getByLabel("Payload contains (JSON)").fill("");
    await page.getByLabel("Error text").fill("REFUSED customer 43");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.waitForURL((url) => url.hash.includes("error=") && !url.hash.includes("payload="));
    await poll(() => listedIds()).toEqual([ids.broken43]);
    await poll(() => page.getByTestId("match-count").textContent()).toBe("1 job");
    expect(await page.locator(`tr[data-job-id="${ids.broken43}"]`).getByTestId("last-error").textContent()).toBe("PermanentError: gateway refused customer 43");
    await screenshot("41-search-error");

    // A created range, typed in the browser's zone (UTC+05:30) and kept in the URL in UTC.
    await page.getByLabel("Created after").fill("2099-01-01T00:00");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.waitForURL((url) => url.hash.includes("createdAfter="));
    expect(new URLSearchParams(new URL(page.url()).hash.split("?")[1]).get("createdAfter")).toBe("2098-12-31T18:30:00.000Z");
    await page.getByText("No jobs match.").waitFor();
    await poll(() => page.getByTestId("match-count").textContent()).toBe("0 jobs");
  });

  it("shows the overview's parts: counts, the oldest ready job, a job past its lease, top errors linking to their search, workers' load", async () => {
    const ready = await api("POST", "/v1/jobs", { kind: "report.build", queue: "reports", payload: { n: 1 } });
    expect(ready.status).toBe(201);
    await page.goto(`${server.url}/#/`);
    const queues = page.getByTestId("queues");
    await queues.waitFor();
    // Default: 3 invoices succeeded, 5 dead, and one waiting an hour; none sleeping; nothing estimated in a table this small.
    const cells = () => queues.locator("tr[data-queue=default] td").allTextContents();
    await poll(async () => (await cells()).slice(1, 9)).toEqual(["0", "1", "0", "0", "0", "3", "0", "5"]);
    expect(await queues.locator("tr[data-queue=default] [data-testid=recent]").textContent()).toBe("3 ok, 5 failed");
    expect(await queues.locator("tr[data-queue=default] [data-testid=failure-rate]").textContent()).toBe("63%");
    expect(await queues.locator(".estimated").count()).toBe(0);

    const oldest = page.getByTestId("oldest-ready");
    await poll(() => oldest.locator("a[href^='#/jobs/']").getAttribute("href")).toBe(`#/jobs/${ready.json.id}`);
    expect(await oldest.textContent()).toContain("report.build in queue reports (tenant default) has waited");

    const stuckPart = page.getByTestId("stuck");
    expect(await stuckPart.getByTestId("stuck-count").textContent()).toBe("1");
    const stuckRow = stuckPart.locator(`tr[data-job-id="${ids.stuck}"]`);
    expect(await stuckRow.locator("a[href^='#/jobs/']").getAttribute("href")).toBe(`#/jobs/${ids.stuck}`);
    expect(await stuckRow.locator("td").nth(3).textContent()).toBe(STUCK_WORKER);
    expect(await stuckRow.locator("td").nth(4).textContent()).toMatch(/^2 min \d+ s ago$/);

    const kinds = page.getByTestId("kinds");
    expect(await kinds.locator("tr[data-kind='invoice.send'] td").allTextContents()).toEqual(["invoice.send", "3", "5", "63%"]);

    const worker = page.locator(`[data-testid=workers] tr[data-worker-id="${STUCK_WORKER}"]`);
    expect(await worker.getByTestId("load").textContent()).toBe("1 / 4");
    expect(await worker.locator("a.chip").getAttribute("href")).toBe(`#/jobs/${ids.stuck}`);
    expect(await page.getByTestId("incomplete").count()).toBe(0);

    // Errors grouped by message, most frequent first; each links to the search for its text.
    const errors = page.getByTestId("top-errors").locator("tbody tr");
    expect((await errors.nth(0).locator("td").allTextContents()).slice(0, 3)).toEqual(["upstream timeout", "3", "invoice.send"]);
    expect(await errors.locator("td.message").allTextContents()).toEqual(
      expect.arrayContaining(["upstream timeout", "gateway refused customer 43", "gateway refused customer 44"]),
    );
    await page.getByTestId("throughput-chart").waitFor();
    await screenshot("42-overview-at-a-glance");
    await errors.nth(0).getByRole("link").click();
    await page.waitForURL((url) => url.hash.startsWith("#/jobs?"));
    expect(new URLSearchParams(new URL(page.url()).hash.split("?")[1]).get("error")).toBe("upstream timeout");
    await poll(() => listedIds()).toEqual(ids.flaky);
    await poll(() => page.getByTestId("match-count").textContent()).toBe("3 jobs");
  });

  it("marks the overview's parts the server left out, instead of showing them empty", async () => {
    // The server leaves a part out when it runs past the time bound (test/overview.test.ts makes that happen);
    // here its answer is rewritten on the way, as if it had.
    await page.route("**/v1/overview", async (route) => {
      const response = await route.fetch();
      const overview = await response.json();
      overview.incomplete = ["recent", "stuck"];
      overview.stuck = null;
      overview.kinds = [];
      overview.topErrors = [];
      for (const queue of overview.queues) queue.recent = null;
      await route.fulfill({ response, json: overview });
    });
    try {
      await page.goto(`${server.url}/#/jobs`);
      await page.goto(`${server.url}/#/`);
      await poll(() => page.getByTestId("incomplete").textContent()).toBe(
        "Not read within the time bound, so left out: the recent window (throughput, failure rates, top errors); jobs past their lease.",
      );
      for (const part of ["stuck", "kinds", "top-errors"]) {
        expect(await page.getByTestId(part).getAttribute("data-incomplete"), part).toBe("true");
        expect(await page.getByTestId(part).locator("p").first().textContent(), part).toMatch(/^Not read within the time bound/);
      }
      expect(await page.getByTestId("oldest-ready").getAttribute("data-incomplete")).toBeNull();
      expect(await page.locator("[data-testid=queues] tr[data-queue=default] [data-testid=recent]").textContent()).toBe("—");
      await screenshot("42b-overview-incomplete");
    } finally {
      await page.unroute("**/v1/overview");
    }
  });

  it("retries every dead job of a search in bulk, its progress bar moving to the end", async () => {
    // Small batches with a pause between them, so that the walk takes seconds and the bar is seen moving.
    tune(test.conveyor, { batchSize: 5, pauseMs: 150 });
    const dead = await jobsIn(test.conveyor, "dead", DEAD_JOBS, { kind: "export.item" });
    await page.goto(`${server.url}/#/jobs?status=dead&kind=export.item`);
    await poll(() => page.getByTestId("match-count").textContent()).toBe("120 jobs");

    await page.getByRole("button", { name: "Retry", exact: true }).click();
    const dialog = page.getByTestId("bulk-dialog");
    await poll(() => dialog.getByTestId("bulk-dialog-count").textContent()).toBe("120 jobs");
    expect(await dialog.getByTestId("bulk-dialog-filter").textContent()).toBe("status dead; kind export.item");
    await screenshot("43-bulk-confirm");
    await dialog.getByRole("button", { name: "Confirm retry" }).click();

    const { seen, status } = await followProgress(page);
    expect(status).toBe("succeeded");
    expect(seen.some(([value, max]) => value > 0 && value < max), `readings: ${JSON.stringify(seen)}`).toBe(true);
    const [value, max] = seen.at(-1)!;
    expect(value).toBe(max);
    expect(await page.getByTestId("bulk-progress-text").textContent()).toBe("120 of 120 jobs");
    await screenshot("44-bulk-progress-done");

    // Requeued: back in their queue with fresh attempts, the dead letters gone; the page's list refreshed.
    expect((await api("GET", "/v1/jobs/count?kind=export.item&status=queued")).json).toEqual({ count: DEAD_JOBS, estimated: false });
    expect((await api("GET", "/v1/jobs/count?kind=export.item&status=dead")).json).toEqual({ count: 0, estimated: false });
    expect((await api("GET", "/v1/dead-letters?kind=export.item")).json.items).toEqual([]);
    const sample = (await api("GET", `/v1/jobs/${dead[0]}`)).json;
    expect({ status: sample.status, attempts: sample.attempts }).toEqual({ status: "queued", attempts: 0 });
    await page.getByText("No jobs match.").waitFor();

    // A retried job's timeline names the bulk action, linked to its page.
    const [retry] = sample.requeues;
    expect(retry).toEqual({ at: expect.any(String), action: "bulk_retry", bulkActionId: expect.any(String) });
    await page.goto(`${server.url}/#/jobs/${dead[0]}`);
    const retried = page.locator("[data-testid=timeline] [data-testid=requeue]");
    await poll(() => retried.locator(".requeue-what").textContent()).toBe(`Retried by bulk action ${retry.bulkActionId.slice(-12)}`);
    expect(await retried.getByTestId("requeue-bulk-action").getAttribute("href")).toBe(`#/bulk-actions/${retry.bulkActionId}`);

    // The record: who, what, over which jobs, how far.
    await page.getByRole("link", { name: "Bulk actions" }).click();
    const row = page.locator("[data-testid=bulk-actions] tbody tr").first();
    await row.waitFor();
    expect((await row.locator("td").allTextContents()).slice(1, 6)).toEqual([
      "Retry",
      "status dead; kind export.item",
      "succeeded",
      "120 / 120",
      keys.adminId,
    ]);
    await screenshot("45-bulk-actions");
    await row.getByRole("link").first().click();
    await page.getByTestId("bulk-action-page").waitFor();
    expect(page.url().endsWith(`#/bulk-actions/${retry.bulkActionId}`)).toBe(true);
    expect(await page.getByTestId("bulk-filter").textContent()).toBe("status dead; kind export.item");
    expect(await page.getByTestId("bulk-progress-bar").evaluate((element) => {
      const bar = element as unknown as { value: number; max: number };
      return bar.value === bar.max;
    })).toBe(true);
    const back = new URLSearchParams((await page.getByRole("link", { name: "The jobs this filter finds now" }).getAttribute("href"))!.split("?")[1]);
    expect(Object.fromEntries(back)).toEqual({ status: "dead", kind: "export.item" });
    await screenshot("46-bulk-action");
  });

  it("keeps a tenant key's bulk action to its own tenant, and shows the 403 for another's", async () => {
    tune(test.conveyor, { batchSize: 5, pauseMs: 0 });
    const acme = await jobsIn(test.conveyor, "dead", 10, { kind: "export.item", tenant: "acme" });
    const globex = await jobsIn(test.conveyor, "dead", 10, { kind: "export.item", tenant: "globex" });
    const tenantPage = await context.newPage();
    tenantPage.setDefaultTimeout(20_000);
    tenantPage.on("pageerror", (error) => browserErrors.push(error.message));
    try {
      // Another tab of the same browser shares nothing: sessionStorage is per tab.
      await signIn(tenantPage, keys.acme);
      await tenantPage.goto(`${server.url}/#/jobs?status=dead&kind=export.item`);
      await poll(() => tenantPage.getByTestId("match-count").textContent()).toBe("10 jobs");
      await poll(() => listedIds(tenantPage)).toEqual(acme);
      await tenantPage.getByRole("button", { name: "Retry", exact: true }).click();
      await poll(() => tenantPage.getByTestId("bulk-dialog-count").textContent()).toBe("10 jobs");
      await tenantPage.getByRole("button", { name: "Confirm retry" }).click();
      expect((await followProgress(tenantPage)).status).toBe("succeeded");
      expect(await tenantPage.getByTestId("bulk-progress-text").textContent()).toBe("10 of 10 jobs");

      const statuses = async (jobIds: string[]) => new Set(await Promise.all(jobIds.map(async (id) => (await api("GET", `/v1/jobs/${id}`)).json.status)));
      expect(await statuses(acme)).toEqual(new Set(["queued"]));
      expect(await statuses(globex)).toEqual(new Set(["dead"]));

      // Naming the other tenant: the search is refused, and so is the action.
      await tenantPage.goto(`${server.url}/#/jobs?status=dead&kind=export.item&tenant=globex`);
      await poll(() => tenantPage.locator("main > section > .problem").textContent()).toMatch(/^403 FORBIDDEN: .*cannot act for tenant "globex"/);
      await tenantPage.getByRole("button", { name: "Retry", exact: true }).click();
      const dialog = tenantPage.getByTestId("bulk-dialog");
      await dialog.getByRole("button", { name: "Confirm retry" }).click();
      await poll(() => dialog.getByRole("alert").textContent()).toMatch(/^403 FORBIDDEN: .*cannot act for tenant "globex"/);
      await screenshot("47-bulk-tenant-refused", tenantPage);
      expect(await statuses(globex)).toEqual(new Set(["dead"]));

      // Its record holds its own operation only.
      await tenantPage.goto(`${server.url}/#/bulk-actions`);
      await tenantPage.getByTestId("bulk-actions").waitFor();
      expect(await tenantPage.locator("[data-testid=bulk-actions] tbody tr").count()).toBe(1);
      expect(await tenantPage.locator("[data-testid=bulk-actions] tbody tr td").nth(2).textContent()).toBe("status dead; kind export.item (tenant acme)");
    } finally {
      await tenantPage.close();
    }
  });

  it("marks estimated counts: '~' on the overview, 'about' for a search's matches", async () => {
    // A second client and server on the same schema that counts at most 20 jobs one by one.
    const counting = await createTestConveyor({ jobs: [invoice, item, stuck], logger: silent, schema: test.schema, exactCountLimit: 20 }, { migrate: false });
    const estimating = await startApiServer(counting.conveyor, { port: 0, logger: silent });
    const other = await context.newPage();
    other.setDefaultTimeout(20_000);
    other.on("pageerror", (error) => browserErrors.push(error.message));
    try {
      await sql(test.conveyor, "ANALYZE {{schema}}.jobs");
      await other.goto(`${estimating.url}/`);
      await other.getByLabel("API key").fill(keys.admin);
      await other.getByRole("button", { name: "Sign in" }).click();
      const queued = other.locator("[data-testid=queues] tr[data-queue=default] td").nth(2).locator("a");
      await poll(() => queued.textContent()).toMatch(/^~[\d,]+$/);
      expect(await queued.getAttribute("title")).toMatch(/^about [\d,]+: estimated from table statistics \(more than 20, the most counted one by one\)$/);
      await screenshot("52-overview-estimated", other);

      await other.goto(`${estimating.url}/#/jobs?kind=export.item`);
      await poll(() => other.getByTestId("match-count").textContent()).toMatch(/^about [\d,.]+( million| billion)? jobs$/);
      expect(await other.getByTestId("match-count").getAttribute("title")).toMatch(/^estimated from table statistics/);
    } finally {
      await other.close();
      await estimating.close();
      await counting.cleanup();
    }
    // A second client, server and page on a CI machine running other suites: two polls of 20 s each, with room to start them.
  }, 120_000);

  it("fits the search with its filters open, a bulk action's progress, the overview and the bulk actions pages on a 390 px screen", async () => {
    tune(test.conveyor, { batchSize: 20, pauseMs: 100 });
    const narrow = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, timezoneId: "Asia/Kolkata" });
    const phone = await narrow.newPage();
    phone.setDefaultTimeout(20_000);
    phone.on("pageerror", (error) => browserErrors.push(error.message));
    const width = () => phone.evaluate<number>("document.documentElement.scrollWidth");
    try {
      await signIn(phone, keys.admin);

      await phone.goto(`${server.url}/#/jobs?kind=export.item&status=queued&payload=${encodeURIComponent('{"n":1}')}&error=boom`);
      await phone.getByTestId("match-count").waitFor();
      expect(await phone.locator("details.more-filters").getAttribute("open")).not.toBeNull(); // open: fields of it are set
      await phone.waitForLoadState("networkidle");
      expect(await width(), "jobs with more filters open").toBeLessThanOrEqual(390);
      await screenshot("48-narrow-jobs-filters", phone);

      // A bulk action over the 120 queued jobs, from its confirmation to its end.
      await phone.goto(`${server.url}/#/jobs?kind=export.item&status=queued&tenant=default`);
      await poll(() => phone.getByTestId("match-count").textContent()).toBe("120 jobs");
      await phone.getByRole("button", { name: "Set priority", exact: true }).click();
      await phone.getByLabel("New priority").fill("7");
      expect(await width(), "bulk confirmation").toBeLessThanOrEqual(390);
      await screenshot("49-narrow-bulk-confirm", phone);
      await phone.getByRole("button", { name: "Confirm set priority" }).click();
      await phone.getByTestId("bulk-progress").waitFor();
      expect(await width(), "bulk progress").toBeLessThanOrEqual(390);
      await screenshot("50-narrow-bulk-progress", phone);
      expect((await followProgress(phone)).status).toBe("succeeded");
      expect((await api("GET", "/v1/jobs?kind=export.item&status=queued&tenant=default&limit=1")).json.items[0].priority).toBe(7);

      const { json: operations } = await api("GET", "/v1/bulk-actions?limit=1");
      const pages: Array<[string, string, string]> = [
        ["overview", "#/", "[data-testid=queues]"],
        ["bulk actions", "#/bulk-actions", "[data-testid=bulk-actions]"],
        ["bulk action", `#/bulk-actions/${operations.items[0].id}`, "[data-testid=bulk-action-page]"],
      ];
      for (const [name, hash, ready] of pages) {
        await phone.goto(`${server.url}/${hash}`);
        await phone.locator(ready).waitFor();
        await phone.waitForLoadState("networkidle");
        expect(await width(), name).toBeLessThanOrEqual(390);
        await screenshot(`51-narrow-${name.replace(" ", "-")}`, phone);
      }
    } finally {
      await narrow.close();
    }
    expect(browserErrors).toEqual([]);
  });
});
