import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { REPO_ROOT } from "../cli/support.js";

/** Debian's Chromium, which CI installs (.ci/run); browser suites skip without it. */
export const CHROMIUM = "/usr/bin/chromium";
/** Where browser suites leave their screenshots. */
export const DASHBOARD_ARTIFACTS = join(REPO_ROOT, "test-artifacts", "dashboard");

/**
 * True when Chromium is installed. When it is not, says so loudly (it only
 * happens on a machine without it) and the suite named `suite` is skipped.
 */
export function chromiumAvailable(suite: string): boolean {
  const available = existsSync(CHROMIUM);
  if (!available) console.warn(`\n!!! SKIPPING ${suite}: ${CHROMIUM} is missing (apt-get install -y chromium) !!!\n`);
  return available;
}

export interface BrowserPage {
  browser: Browser;
  context: BrowserContext;
  page: Page;
}

/**
 * Headless Chromium with one 1280×900 page: actions wait at most 20 s,
 * uncaught page errors are pushed to `errors`, and any dialog is dismissed
 * (nothing should open one; an injected alert() must not hang a test).
 */
export async function openBrowserPage(errors: string[], options: { timezoneId?: string } = {}): Promise<BrowserPage> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"],
    timeout: 30_000,
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("dialog", (dialog) => void dialog.dismiss());
  return { browser, context, page };
}

/** An API answer as the browser suites read it: the status and the parsed body (undefined when empty). */
export interface ApiAnswer {
  status: number;
  json: any;
}

/** One request to the API at `baseUrl` with `key` as its bearer token, `body` sent as JSON when given. */
export async function apiRequest(baseUrl: string, key: string, method: string, path: string, body?: unknown): Promise<ApiAnswer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

/** A full-page screenshot of `page` into DASHBOARD_ARTIFACTS, as `<name>.png`. */
export async function saveScreenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(DASHBOARD_ARTIFACTS, `${name}.png`), fullPage: true });
}

/** How many rounds the dashboard's polls named `name` have completed in `page`'s document (`data-refreshes-<name>`, see usePoll). */
export async function refreshRounds(page: Page, name: string): Promise<number> {
  return Number((await page.locator("html").getAttribute(`data-refreshes-${name}`)) ?? 0);
}

/**
 * Waits until the dashboard's polls named `name` have completed `more`
 * rounds past `since` (by default, their count now), each answered and
 * rendered: what the page shows then is what those rounds left.
 */
export async function refreshes(page: Page, name: string, more: number, since?: number): Promise<void> {
  const target = (since ?? (await refreshRounds(page, name))) + more;
  await page.waitForFunction(
    ([attribute, rounds]) => Number((globalThis as any).document.documentElement.getAttribute(attribute) ?? 0) >= rounds,
    [`data-refreshes-${name}`, target] as const,
  );
}
