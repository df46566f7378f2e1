import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { sendProblem } from "./error-handler.js";
import { HttpProblem } from "./problem.js";

/**
 * The web dashboard: a single-page app built by Vite from `dashboard/` into
 * `dist/dashboard` (`npm run build`), served here at `/` and `/assets/*`.
 * The files are read into memory once (a few hundred KB) and looked up by
 * exact path, so no request can name a file outside the build.
 *
 * The app signs in with an API key and calls the `/v1` routes like any
 * client. It renders payloads and errors as text, never as HTML; the
 * Content-Security-Policy below is the second line: no inline script, no
 * script from anywhere but this origin, no framing.
 */

/** Headers on every dashboard file. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".map": "application/json",
  ".txt": "text/plain; charset=utf-8",
};

interface StaticFile {
  body: Buffer;
  type: string;
  etag: string;
}

/**
 * Where the build lives: `dist/dashboard` under the package root (the
 * nearest folder above this module with a package.json), whether this
 * module runs from `dist/src/http` or, in tests, from `src/http`.
 */
export function dashboardDirectory(): string | null {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json"))) return join(dir, "dist", "dashboard");
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

function readBuild(root: string): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else {
        const body = readFileSync(path);
        const etag = `"${createHash("sha1").update(body).digest("base64url").slice(0, 20)}"`;
        files.set(`/${relative(root, path).split(sep).join("/")}`, {
          body,
          type: CONTENT_TYPES[extname(name)] ?? "application/octet-stream",
          etag,
        });
      }
    }
  };
  walk(root);
  return files;
}

/**
 * Serve the dashboard at `/` (index.html) and `/assets/*` (Vite's hashed
 * files, cached for a year). When the build is missing, `/` answers 503
 * saying how to build it; the API works either way. Routes are hidden from
 * the OpenAPI document.
 */
export function installDashboard(app: FastifyInstance, directory: string | null = dashboardDirectory()): void {
  const files = directory && existsSync(join(directory, "index.html")) ? readBuild(directory) : null;
  const send = (request: FastifyRequest, reply: FastifyReply, path: string) => {
    const file = files?.get(path);
    if (!files) {
      return sendProblem(request, reply, new HttpProblem(503, "UNAVAILABLE", "the dashboard is not built: run `npm run build`"));
    }
    if (!file) return sendProblem(request, reply, new HttpProblem(404, "NOT_FOUND", `no route ${request.method} ${request.url.split("?")[0]}`));
    reply.headers(SECURITY_HEADERS).header("etag", file.etag);
    // index.html names the hashed assets of this build, so it is revalidated; the assets never change.
    reply.header("cache-control", path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache");
    if (request.headers["if-none-match"] === file.etag) return reply.code(304).send();
    return reply.type(file.type).send(file.body);
  };
  const hidden = { schema: { hide: true } };
  app.get("/", hidden, (request, reply) => send(request, reply, "/index.html"));
  app.get("/favicon.svg", hidden, (request, reply) => send(request, reply, "/favicon.svg"));
  app.get<{ Params: { "*": string } }>("/assets/*", hidden, (request, reply) => send(request, reply, `/assets/${request.params["*"]}`));
}
