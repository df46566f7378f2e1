import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyInstance } from "fastify";

/** Header carrying the request id, both ways. */
export const REQUEST_ID_HEADER = "x-request-id";

// A client's id is echoed only when it is short and plain, so it is safe in
// logs and headers and cannot be used to forge log lines.
const SANE_REQUEST_ID = /^[A-Za-z0-9._:\-]{1,128}$/;

/** Whether a client's request id is echoed (else a fresh UUID replaces it). */
export function isSaneRequestId(sent: string): boolean {
  return SANE_REQUEST_ID.test(sent);
}

/** The client's `x-request-id` when sane, else a fresh UUID. Fastify's `genReqId`. */
export function requestIdFor(request: IncomingMessage): string {
  const sent = request.headers[REQUEST_ID_HEADER];
  return typeof sent === "string" && isSaneRequestId(sent) ? sent : randomUUID();
}

/** Echo the request id on every response, errors and 404s included. */
export function installRequestIdHeader(app: FastifyInstance): void {
  app.addHook("onRequest", async (request, reply) => {
    // Set early, so even answers sent before routing (413, 415, timeouts) carry it.
    reply.header(REQUEST_ID_HEADER, request.id);
  });
}
