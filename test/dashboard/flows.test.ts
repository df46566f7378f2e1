/**
 * The dashboard's flow pages in real headless Chromium (as browser.test.ts):
 * the flows list, a flow's graph level by level with each node's live
 * status, and a job page linking its parents and children.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { chromiumAvailable, DASHBOARD_ARTIFACTS, openBrowserPage } from "../helpers/browser.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ApiServer, startApiServer } from "../../packages/http/src/server.js";
import { defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { silent } from "../cli/support.js";

const available = chromiumAvailable("the dashboard flow tests");

const step = defineJob({ kind: "step", schema: z.object({ n: z.number() }), handler: async () => {} });

let test: TestConveyor;
let server: ApiServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let adminKey = "";
let flow: { id: string; jobs: Record<string, { id: string }> };
const browserErrors: string[] = [];

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${adminKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: 20_000, interval: 100 });
/** Each node of the graph as "level:node:status", in page order. */
const graph = () =>
  page.locator("[data-testid=flow-node]").evaluateAll((nodes) =>
    nodes.map((node) => `${node.closest("[data-level]")!.getAttribute("data-level")}:${node.getAttribute("data-node")}:${node.querySelector("[data-testid=status]")!.textContent}`),
  );

describe.skipIf(!available)("the dashboard's flow pages in Chromium", () => {
  beforeAll(async () => {
    mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
    test = await createTestConveyor({ jobs: [step], logger: silent });
    adminKey = (await test.conveyor.apiKeys.create({ admin: true, name: "flow browser test" })).key;
    server = await startApiServer(test.conveyor, { port: 0, logger: silent });
    // No worker: the root is not due for ten minutes, so everything waits until the test moves it.
    const created = await api("POST", "/v1/flows", {
      name: "order 1001",
      jobs: {
        charge: { kind: "step", payload: { n: 1 }, delayMs: 600_000 },
        reserve: { kind: "step", payload: { n: 2 }, delayMs: 600_000 },
        ship: { kind: "step", payload: { n: 3 }, dependsOn: ["charge", { node: "reserve", onFailure: "run" }] },
        notify: { kind: "step", payload: { n: 4 }, dependsOn: ["ship"] },
      },
    });
    expect(created.status).toBe(201);
    flow = created.json;
    ({ browser, context, page } = await openBrowserPage(browserErrors));
    // The key in the fragment signs in, as the link `conveyor dev` prints.
    await page.goto(`${server.url}/#key=${adminKey}`);
    await page.getByRole("button", { name: "Sign out" }).waitFor();
  }, 90_000);

  afterAll(async () => {
    await context?.close().catch(() => {});
    await browser?.close().catch(() => {});
    await server?.close();
    await test?.cleanup();
  });

  it("lists the flow and opens it: nodes grouped by level with their states, refreshed as they change", async () => {
    await page.getByRole("link", { name: "Flows" }).click();
    const row = page.locator(`[data-testid=flows] tr[data-flow-id="${flow.id}"]`);
    await poll(() => row.locator("td").nth(2).textContent()).toBe("order 1001");
    await row.locator("a").click();
    await page.getByTestId("flow-page").waitFor();
    await poll(() => page.locator("[data-testid=flow-page] h1").textContent()).toContain("order 1001");
    await poll(graph).toEqual(["0:charge:queued", "0:reserve:queued", "1:ship:waiting", "2:notify:waiting"]);
    await poll(() => page.getByTestId("flow-counts").textContent()).toBe("2 waiting, 2 queued");
    await poll(() => page.locator("[data-testid=flow-edge][data-to=ship]").evaluateAll((edges) => edges.map((edge) => edge.getAttribute("data-from")).sort())).toEqual([
      "charge",
      "reserve",
    ]);
    expect(await page.locator("[data-node=ship] title").textContent()).toBe("ship (step): waiting; waits for charge, reserve");
    await page.screenshot({ path: join(DASHBOARD_ARTIFACTS, "20-flow.png"), fullPage: true });

    // charge cancelled: ship (policy fail) is dead-lettered, and notify after it; the page shows it at its next refresh.
    expect((await api("POST", `/v1/jobs/${flow.jobs.charge!.id}/cancel`)).status).toBe(200);
    await poll(graph).toEqual(["0:charge:cancelled", "0:reserve:queued", "1:ship:dead", "2:notify:dead"]);
    await page.screenshot({ path: join(DASHBOARD_ARTIFACTS, "21-flow-after-cancel.png"), fullPage: true });
  });

  it("links each node to its job, and the job page to its parents, its children and its flow", async () => {
    await page.goto(`${server.url}/#/flows/${flow.id}`);
    await page.locator("[data-node=ship] a").first().click();
    await page.getByTestId("job-page").waitFor();
    await poll(() => page.evaluate<string>("window.location.hash")).toBe(`#/jobs/${flow.jobs.ship!.id}`);
    const parents = page.getByTestId("job-parents");
    await poll(() => parents.locator("li").evaluateAll((items) => items.map((item) => item.getAttribute("data-job-id")).sort())).toEqual(
      [flow.jobs.charge!.id, flow.jobs.reserve!.id].sort(),
    );
    await poll(() => parents.locator(`li[data-job-id="${flow.jobs.reserve!.id}"]`).textContent()).toContain("on failure: run");
    await poll(() => page.getByTestId("job-children").locator("li").allTextContents()).toEqual([expect.stringMatching(/^notify\s*dead/)]);
    await poll(() => page.getByTestId("job-flow").textContent()).toContain("ship");
    await page.screenshot({ path: join(DASHBOARD_ARTIFACTS, "22-job-links.png"), fullPage: true });

    // Child, then back up through its parent, then to the flow.
    await page.getByTestId("job-children").getByRole("link", { name: "notify" }).click();
    await poll(() => page.evaluate<string>("window.location.hash")).toBe(`#/jobs/${flow.jobs.notify!.id}`);
    await page.getByTestId("job-parents").getByRole("link", { name: "ship" }).click();
    await poll(() => page.evaluate<string>("window.location.hash")).toBe(`#/jobs/${flow.jobs.ship!.id}`);
    await page.getByTestId("job-flow").getByRole("link").click();
    await page.getByTestId("flow-graph").waitFor();
  });

  it("fits the flow pages on a 390 px wide screen", async () => {
    const narrow = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const phone = await narrow.newPage();
    phone.on("pageerror", (error) => browserErrors.push(error.message));
    try {
      await phone.goto(`${server.url}/#key=${adminKey}`);
      for (const hash of ["#/flows", `#/flows/${flow.id}`, `#/jobs/${flow.jobs.ship!.id}`]) {
        await phone.goto(`${server.url}/${hash}`);
        await phone.locator(".updated").first().waitFor();
        await phone.waitForLoadState("networkidle");
        expect(await phone.evaluate<number>("document.scrollingElement.scrollWidth"), hash).toBeLessThanOrEqual(390);
      }
    } finally {
      await narrow.close();
    }
    expect(browserErrors).toEqual([]);
  });
});
