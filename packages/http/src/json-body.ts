import type { IncomingHttpHeaders } from "node:http";
import type { FastifyInstance } from "fastify";
import { parseStrictJson, StrictJsonError } from "conveyor-jobs/server";
import { HttpProblem } from "./problem.js";

/**
 * Parse JSON bodies strictly, so what a client sends is either stored
 * exactly or refused with a clear 4xx, never silently changed:
 * - bytes that are not UTF-8 → 400 (a lenient decoder would swap in U+FFFD);
 * - malformed JSON → 400;
 * - a number JSON.parse cannot hold exactly (12345678901234567890, 1e400)
 *   → 422 naming the number (send such values as strings);
 * - a `__proto__` key → 422 (JavaScript code handling it can change prototypes);
 * - nesting past the payload limit → 422;
 * - a NUL character or a lone UTF-16 surrogate in any string or key → 422 naming its path;
 * - a charset other than UTF-8, or a Content-Encoding other than identity → 415;
 * An empty body parses as `undefined`, so body-less POSTs work with any Content-Type.
 */
export function installJsonBody(app: FastifyInstance, bodyLimit: number): void {
  // JSON only: Fastify's default text/plain parser would hand strings to routes that expect objects.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "buffer", bodyLimit }, (request, body: Buffer, done) => {
    try {
      checkBodyEncoding(request.headers);
      done(null, parseJsonBody(body));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

// The charset parameter of a Content-Type, quoted or not.
const CHARSET = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i;

/**
 * Refuse with 415 what would otherwise be guessed at: a charset other than
 * UTF-8 (the bytes would be read as UTF-8 regardless) and a compressed body
 * (Content-Encoding other than identity; it would be parsed still compressed,
 * or its compressed size held to the body limit).
 */
function checkBodyEncoding(headers: IncomingHttpHeaders): void {
  const encoding = headers["content-encoding"];
  if (encoding !== undefined && encoding.split(",").some((coding) => !["identity", ""].includes(coding.trim().toLowerCase()))) {
    throw new HttpProblem(415, "UNSUPPORTED_MEDIA_TYPE", "request bodies are not accepted compressed: send them without Content-Encoding", {
      headers: { "accept-encoding": "identity" },
    });
  }
  const match = CHARSET.exec(headers["content-type"] ?? "");
  const charset = (match?.[1] ?? match?.[2])?.toLowerCase();
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw new HttpProblem(415, "UNSUPPORTED_MEDIA_TYPE", "request body must be JSON in UTF-8: Content-Type application/json, with no charset or charset=utf-8");
  }
}

/**
 * The parse itself (wire/strict-json.ts), its refusals as problems: 400 for
 * a body that is not UTF-8 or not JSON, 422 for JSON it would not keep exactly.
 */
export function parseJsonBody(body: Buffer): unknown {
  try {
    return parseStrictJson(body);
  } catch (error) {
    if (!(error instanceof StrictJsonError)) throw error;
    if (error.kind === "malformed") throw new HttpProblem(400, "MALFORMED_REQUEST", error.message);
    throw new HttpProblem(422, "VALIDATION", error.message, { errors: [error.issue ?? { path: "", message: error.message }] });
  }
}
