/**
 * The dashboard in real headless Chromium (Debian's `chromium`, driven by
 * playwright-core), against an API server on a real port over a schema of
 * this file's own: sign in, watch a job enqueued through the API appear,
 * open it, cancel it, requeue and purge dead letters, and check that a
 * payload holding markup is shown as text. Screenshots go to
 * test-artifacts/dashboard/.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { apiRequest, chromiumAvailable, DASHBOARD_ARTIFACTS, openBrowserPage, refreshes, saveScreenshot } from "../helpers/browser.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiServer, startApiServer } from "../../packages/http/src/server.js";
import { z } from "zod";
import exampleJobs from "../../packages/core/examples/jobs.js";
import { JOB_STATUSES } from "../../packages/core/src/core/states.js";
import { defineJob, PermanentError } from "../../packages/core/src/index.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { runUntilFinished, silent } from "../cli/support.js";

const available = chromiumAvailable("the dashboard browser tests");

/** Fails for good with its payload as the error message: markup in stored errors. */
const failsWithMarkup = defineJob({
  kind: "markup.fail",
  schema: z.object({ html: z.string() }),
  maxAttempts: 1,
  handler: ({ payload }) => {
    throw new PermanentError(payload.html);
  },
});

let test: TestConveyor;
let server: ApiServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const keys = { admin: "", acme: "" };
const browserErrors: string[] = [];

const api = (method: string, path: string, body?: unknown, key = keys.admin) => apiRequest(server.url, key, method, path, body);

const screenshot = (name: string) => saveScreenshot(page, name);

/** expect.poll with room for the dashboard's 2-second refresh on a loaded machine. */
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 100 });

/** The status badge in a job page's heading. */
const headingStatus = () => page.locator("[data-testid=job-page] h1 [data-testid=status]");

describe.skipIf(!available)("the dashboard in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
    test = await createTestConveyor({ jobs: [...exampleJobs, failsWithMarkup], logger: silent });
    const apiKeys = test.conveyor.apiKeys;
    keys.admin = (await apiKeys.create({ admin: true, name: "browser test" })).key;
    keys.acme = (await apiKeys.create({ tenant: "acme" })).key;
    // Two dead letters (PermanentError on the first attempt), made by a worker that then stops:
    // jobs enqueued later stay queued, so the browser can cancel them.
    await test.conveyor.enqueueMany([
      { job: "email.send", payload: { to: "requeue-me@invalid.example", subject: "a", body: "a" } },
      { job: "email.send", payload: { to: "purge-me@invalid.example", subject: "b", body: "b" } },
    ]);
    await runUntilFinished(test.conveyor, ["email.send"]);
    server = await startApiServer(test.conveyor, { port: 0, logger: silent });
    // A zone without daylight saving and not UTC, so the offset the dashboard shows is known.
    ({ browser, context, page } = await openBrowserPage(browserErrors, { timezoneId: "Asia/Kolkata" }));
  }, 90_000);

  afterAll(async () => {
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.close();
    await test?.cleanup();
  });

  it("signs in with an admin key (refusing a wrong one) and shows the overview", async () => {
    await page.goto(`${server.url}/`);
    await page.getByLabel("API key").fill("cvk_not-a-real-key");
    await page.getByRole("button", { name: "Sign in" }).click();
    await poll(() => page.getByRole("alert").textContent()).toMatch(/not accepted/);

    await page.getByLabel("API key").fill(keys.admin);
    await page.getByRole("button", { name: "Sign in" }).click();
    const queues = page.getByTestId("queues");
    await queues.waitFor();
    // The queue's name, then one column per status.
    await poll(() => queues.locator("tr[data-queue=default] td").nth(1 + JOB_STATUSES.indexOf("dead")).textContent()).toBe("2");
    await page.getByTestId("throughput-chart").waitFor();
    await poll(() => page.getByTestId("throughput-chart").locator("figcaption").textContent()).toMatch(/2 enqueued.*0 succeeded.*2 failed/);
    await screenshot("01-overview");
  });

  it("shows a job enqueued through the API, opens it, and cancels it", async () => {
    await page.goto(`${server.url}/#/jobs`);
    await page.getByTestId("jobs").waitFor();
    const created = await api("POST", "/v1/jobs", { kind: "text.summarize", payload: { text: "Cancel me from the dashboard." } });
    expect(created.status).toBe(201);
    const id: string = created.json.id;
    const row = page.locator(`tr[data-job-id="${id}"]`);
    await row.waitFor(); // arrives with the page's next refresh, no reload
    expect(await row.getByTestId("status").textContent()).toBe("queued");
    await screenshot("02-jobs");

    await row.locator("a[href^='#/jobs/']").click();
    await page.getByTestId("job-page").waitFor();
    expect(page.url()).toContain(`#/jobs/${id}`);
    expect(await page.getByTestId("payload").textContent()).toContain('"text": "Cancel me from the dashboard."');
    expect(await headingStatus().textContent()).toBe("queued");
    await page.getByRole("button", { name: "Cancel job" }).click();
    await poll(() => headingStatus().textContent()).toBe("cancelled");
    expect(await page.getByRole("status").textContent()).toBe("Cancelled.");
    expect(await page.getByRole("button", { name: "Cancel job" }).count()).toBe(0);
    expect((await api("GET", `/v1/jobs/${id}`)).json.status).toBe("cancelled");
    await screenshot("03-job-cancelled");

    // Filters live in the URL: cancelled jobs only.
    await page.goto(`${server.url}/#/jobs?status=cancelled`);
    await page.locator(`tr[data-job-id="${id}"]`).waitFor();
    expect(await page.locator("[data-testid=jobs] tbody tr").count()).toBe(1);
  });

  it("shows a finished job's latest progress and its result", async () => {
    const created = await api("POST", "/v1/jobs", { kind: "text.summarize", payload: { text: "Progress and results, shown." } });
    expect(created.status).toBe(201);
    const id: string = created.json.id;
    await runUntilFinished(test.conveyor, ["text.summarize"]);
    await page.goto(`${server.url}/#/jobs/${id}`);
    await page.getByTestId("job-page").waitFor();
    await poll(() => headingStatus().textContent()).toBe("succeeded");
    await page.getByTestId("progress").waitFor();
    expect(JSON.parse((await page.getByTestId("progress").textContent())!)).toEqual({ counted: 4, of: 4 });
    expect(JSON.parse((await page.getByTestId("result").textContent())!)).toMatchObject({ words: 4, sentences: 1 });
    await screenshot("03b-job-progress-result");
  });

  it("shows the unique key a job holds", async () => {
    const created = await api("POST", "/v1/jobs", { kind: "text.summarize", payload: { text: "Keys, shown." }, unique: { key: "summary-of-7" } });
    expect(created.status).toBe(201);
    await page.goto(`${server.url}/#/jobs/${created.json.id}`);
    await page.getByTestId("job-page").waitFor();
    expect(await page.getByTestId("unique-key").textContent()).toBe("summary-of-7");
  });

  it("shows dead letters with their history, requeues one and purges another", async () => {
    await page.goto(`${server.url}/#/dead-letters`);
    const table = page.getByTestId("dead-letters");
    await table.waitFor();
    expect(await table.locator("tbody tr").count()).toBe(2);
    const { json: list } = await api("GET", "/v1/dead-letters");
    const requeue = list.items.find((entry: any) => entry.payload.to === "requeue-me@invalid.example");
    const purge = list.items.find((entry: any) => entry.payload.to === "purge-me@invalid.example");

    await table.locator(`tr[data-dead-letter-id="${requeue.id}"]`).locator("a[href^='#/dead-letters/']").click();
    await page.getByTestId("dead-letter-page").waitFor();
    const timeline = page.getByTestId("timeline");
    expect(await timeline.locator("li").count()).toBe(1);
    expect(await timeline.textContent()).toMatch(/Attempt 1.*failed.*PermanentError: undeliverable address requeue-me@invalid\.example/);
    await screenshot("04-dead-letter");
    await page.getByRole("button", { name: "Requeue" }).click();
    // Requeued: the job page, back in the queue, history kept (no worker runs now), the requeue named after it.
    await page.waitForURL((url) => url.hash === `#/jobs/${requeue.jobId}`);
    await poll(() => headingStatus().textContent()).toBe("queued");
    await poll(() => page.getByTestId("timeline").locator("li").count()).toBe(2);
    expect(await page.getByTestId("timeline").locator("li").nth(1).getAttribute("data-action")).toBe("requeue");
    expect((await api("GET", `/v1/dead-letters/${requeue.id}`)).status).toBe(404);

    await page.goto(`${server.url}/#/dead-letters/${purge.id}`);
    await page.getByTestId("dead-letter-page").waitFor();
    await page.getByRole("button", { name: "Purge", exact: true }).click();
    await page.getByRole("button", { name: "Purge for good" }).click();
    await page.waitForURL((url) => url.hash === "#/dead-letters");
    await page.getByText("The dead-letter queue is empty.").waitFor();
    expect((await api("GET", `/v1/jobs/${purge.jobId}`)).status).toBe(404);
    await screenshot("06-dead-letters-empty");

    // The requeued job runs and dead-letters again: two "attempt 1"s, told apart, with the requeue between them.
    await runUntilFinished(test.conveyor, ["email.send"]);
    await page.goto(`${server.url}/#/jobs/${requeue.jobId}`);
    await poll(() => headingStatus().textContent()).toBe("dead");
    const attempts = page.getByTestId("timeline").locator("li");
    await poll(() => attempts.count()).toBe(3);
    expect(await attempts.nth(0).locator(".attempt-number").textContent()).toBe("Run 1, attempt 1");
    expect(await attempts.nth(1).getAttribute("data-testid")).toBe("requeue");
    expect(await attempts.nth(1).textContent()).toMatch(/^Requeued from the dead-letter queue: attempts start again \(run 2\) \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+05:30$/);
    expect(await attempts.nth(2).locator(".attempt-number").textContent()).toBe("Run 2, attempt 1");
    await screenshot("06b-job-requeued-timeline");
  });

  it("renders payloads and errors holding markup and script as text", async () => {
    const hostile = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold</b>';
    const created = await api("POST", "/v1/jobs", { kind: "text.summarize", payload: { text: hostile } });
    expect(created.status).toBe(201);
    await page.goto(`${server.url}/#/jobs/${created.json.id}`);
    const payload = page.getByTestId("payload");
    await payload.waitFor();
    expect(await payload.textContent()).toContain(JSON.stringify(hostile).slice(1, -1)); // the JSON string, quotes escaped
    expect(await payload.locator("script, img, b").count()).toBe(0);
    await screenshot("07-markup-in-payload");

    // An error message a handler built from its payload: on the job page and the dead letter's.
    const failing = await api("POST", "/v1/jobs", { kind: "markup.fail", payload: { html: hostile } });
    await runUntilFinished(test.conveyor, ["markup.fail"]);
    await page.goto(`${server.url}/#/jobs/${failing.json.id}`);
    await page.getByTestId("timeline").waitFor();
    expect(await page.getByTestId("timeline").textContent()).toContain(`PermanentError: ${hostile}`);
    const { json: dead } = await api("GET", "/v1/dead-letters?kind=markup.fail");
    await page.goto(`${server.url}/#/dead-letters/${dead.items[0].id}`);
    await page.getByTestId("timeline").waitFor();
    expect(await page.locator(".facts").textContent()).toContain(hostile);
    await page.goto(`${server.url}/#/dead-letters`);
    await page.getByTestId("dead-letters").waitFor();
    expect(await page.getByTestId("dead-letters").textContent()).toContain(hostile);

    expect(await page.locator("main script, main img, main b").count()).toBe(0);
    expect(await page.evaluate("typeof globalThis.__pwned")).toBe("undefined");
    await screenshot("08-markup-in-errors");
  });

  it("shows times with their zone, and no 'loading…' beside an error", async () => {
    const created = await api("POST", "/v1/jobs", { kind: "text.summarize", payload: { text: "What time is it?" } });
    await page.goto(`${server.url}/#/jobs/${created.json.id}`);
    await page.getByTestId("job-page").waitFor();
    const created_at = page.locator(".facts div", { hasText: "Created" }).locator("dd");
    expect(await created_at.textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+05:30$/);
    await poll(() => page.locator(".updated").textContent()).toMatch(/^updated \d\d:\d\d:\d\d UTC\+05:30$/);

    // A filter the API refuses: the error, and no "loading…" that never ends.
    await page.goto(`${server.url}/#/jobs?status=bogus`);
    await page.getByRole("alert").waitFor();
    expect(await page.getByRole("alert").textContent()).toMatch(/^400 /);
    await refreshes(page, "jobs", 1); // past the next refresh
    expect(await page.locator(".page-head").textContent()).not.toContain("loading");
  });

  it("filters jobs by tenant and shows each job's last error", async () => {
    const acme = await api("POST", "/v1/jobs", { kind: "markup.fail", tenant: "acme", payload: { html: "acme broke" } });
    expect(acme.status).toBe(201);
    await runUntilFinished(test.conveyor, ["markup.fail"]);
    await page.goto(`${server.url}/#/jobs`);
    await page.getByTestId("jobs").waitFor();
    await page.getByLabel("Tenant").fill("acme");
    await page.getByLabel("Tenant").press("Enter");
    await page.waitForURL((url) => url.hash.includes("tenant=acme"));
    const row = page.locator(`tr[data-job-id="${acme.json.id}"]`);
    await row.waitFor();
    await poll(async () => new Set(await page.locator("[data-testid=jobs] tbody tr td:nth-child(5)").allTextContents())).toEqual(new Set(["acme"]));
    expect(await row.getByTestId("last-error").textContent()).toBe("PermanentError: acme broke");
    await screenshot("09a-jobs-by-tenant");
  });

  it("shows paused queues and their limits on the overview, as `conveyor queues` does", async () => {
    expect((await api("POST", "/v1/queues/default/pause")).status).toBe(200);
    expect((await api("PATCH", "/v1/queues/default", { concurrency: 3, rateLimit: { count: 10, intervalMs: 1_000 } })).status).toBe(200);
    try {
      await page.goto(`${server.url}/#/`);
      const limits = page.locator("[data-testid=queues] tr[data-queue=default] [data-testid=limits]");
      await poll(() => limits.textContent()).toBe("paused 3 at once · 10 per second");
      await screenshot("09b-overview-limits");
    } finally {
      await api("POST", "/v1/queues/default/resume");
      await api("PATCH", "/v1/queues/default", { concurrency: null, rateLimit: null });
    }
    await poll(() => page.locator("[data-testid=queues] tr[data-queue=default] [data-testid=limits]").textContent()).toBe("none");
  });

  it("shows limits per key with the busiest keys on the overview", async () => {
    expect((await api("PATCH", "/v1/queues/keyed/key-limits", { concurrency: 4, rateLimit: { count: 60, intervalMs: 60_000 } })).status).toBe(200);
    expect((await api("PATCH", "/v1/queues/keyed/keys/hooks.fragile.example/limits", { concurrency: 1 })).status).toBe(200);
    const payload = { to: "keys@example.com", subject: "k", body: "k" };
    const jobs = await test.conveyor.enqueueMany([
      ...Array.from({ length: 3 }, () => ({ job: "email.send", payload, queue: "keyed", limitKey: "hooks.fragile.example" })),
      { job: "email.send", payload, queue: "keyed", limitKey: "api.example.com" },
    ]);
    try {
      await page.goto(`${server.url}/#/`);
      const section = page.locator("[data-testid=key-limits][data-queue=keyed]");
      await poll(() => section.locator("p").first().textContent()).toBe("keyed: every key 4 at once, 60 per minute; 1 key(s) overridden");
      await poll(() => page.locator("[data-testid=queues] tr[data-queue=keyed] [data-testid=limits]").textContent()).toBe(
        "per key 4 at once · 60 per minute",
      );
      await poll(() => section.locator("tr[data-key='hooks.fragile.example'] td").allTextContents()).toEqual([
        "hooks.fragile.example",
        "3",
        "0",
        "1 at once (override)",
      ]);
      await screenshot("09c-overview-key-limits");
    } finally {
      for (const job of jobs) await test.conveyor.cancel(job.id);
      await api("DELETE", "/v1/queues/keyed/key-limits");
    }
  });

  it("fits every page on a 390 px wide screen, without scrolling sideways", async () => {
    const narrow = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const phone = await narrow.newPage();
    phone.setDefaultTimeout(20_000);
    phone.on("pageerror", (error) => browserErrors.push(error.message));
    try {
      const width = () => phone.evaluate<number>("document.scrollingElement.scrollWidth");
      await phone.goto(`${server.url}/`);
      await phone.getByLabel("API key").waitFor();
      expect(await width(), "sign-in").toBeLessThanOrEqual(390);
      await phone.getByLabel("API key").fill(keys.admin);
      await phone.getByRole("button", { name: "Sign in" }).click();
      await phone.getByRole("button", { name: "Sign out" }).waitFor();
      const { json: jobs } = await api("GET", "/v1/jobs?limit=1&status=dead");
      const { json: dead } = await api("GET", "/v1/dead-letters?limit=1");
      const pages: Array<[string, string]> = [
        ["overview", "#/"],
        ["jobs", "#/jobs"],
        ["job", `#/jobs/${jobs.items[0].id}`],
        ["dead letters", "#/dead-letters"],
        ["dead letter", `#/dead-letters/${dead.items[0].id}`],
      ];
      for (const [name, hash] of pages) {
        await phone.goto(`${server.url}/${hash}`);
        await phone.locator("main section h1").waitFor();
        await phone.locator(".updated, [data-testid=job-page], [data-testid=dead-letter-page]").first().waitFor();
        await phone.waitForLoadState("networkidle");
        expect(await width(), name).toBeLessThanOrEqual(390);
        await phone.screenshot({ path: join(DASHBOARD_ARTIFACTS, `10-narrow-${name.replace(" ", "-")}.png`), fullPage: true });
      }
    } finally {
      await narrow.close();
    }
  });

  it("signs in with a tenant key, which sees only its tenant's jobs", async () => {
    const theirs = await api("POST", "/v1/jobs", { kind: "text.summarize", payload: { text: "acme's own" } }, keys.acme);
    expect(theirs.status).toBe(201);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("API key").fill(keys.acme);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Sign out" }).waitFor(); // signed in, on the page it was showing
    await page.goto(`${server.url}/#/jobs`);
    await page.locator(`tr[data-job-id="${theirs.json.id}"]`).waitFor();
    const tenants = await page.locator("[data-testid=jobs] tbody tr td:nth-child(5)").allTextContents();
    expect(new Set(tenants)).toEqual(new Set(["acme"]));
    await screenshot("09-tenant-jobs");
    expect(browserErrors).toEqual([]);
  });
});
