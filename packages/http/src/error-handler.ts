import { randomUUID } from "node:crypto";
import { maxHeaderSize, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ConveyorError, type SearchTimeoutError, ValidationError } from "conveyor-jobs";
import { isConnectionError, MAX_HTTP_PATH_SEGMENT_LENGTH, READ_ONLY_RETRY_AFTER_S } from "conveyor-jobs/server";
import { HttpProblem, PROBLEM_CONTENT_TYPE } from "./problem.js";
import { isSaneRequestId, REQUEST_ID_HEADER } from "./request-id.js";
import { RequestValidationError } from "./validation.js";

/** Limits named in problem details. */
export interface ProblemLimits {
  bodyLimit: number;
  timeoutMs: number;
}

/**
 * The one place errors become HTTP answers. Conveyor's error codes map to
 * statuses here; anything unexpected is logged in full and answered with a
 * generic 500 whose detail names only the request id, so no stack trace,
 * SQL or driver message ever reaches a client.
 */
export function toHttpProblem(error: unknown, { bodyLimit, timeoutMs }: ProblemLimits): HttpProblem {
  if (error instanceof HttpProblem) return error;
  if (error instanceof RequestValidationError) {
    // A bad path id or query parameter is a malformed request; a body that
    // parses but breaks the rules is unprocessable content.
    return error.part === "body"
      ? new HttpProblem(422, "VALIDATION", error.message, { errors: error.issues })
      : new HttpProblem(400, "INVALID_PARAMETER", error.message, { errors: error.issues });
  }
  if (error instanceof ConveyorError) {
    switch (error.code) {
      case "VALIDATION":
        return new HttpProblem(422, "VALIDATION", error.message, { errors: (error as ValidationError).issues });
      case "NOT_FOUND":
        return new HttpProblem(404, "NOT_FOUND", error.message);
      case "CONFLICT":
        return new HttpProblem(409, "CONFLICT", error.message);
      case "SEARCH_TIMEOUT":
        // 422, not 503: the same search would time out again; a narrower one answers.
        return new HttpProblem(422, "SEARCH_TIMEOUT", error.message, { extensions: { timeoutMs: (error as SearchTimeoutError).timeoutMs } });
      case "DATABASE":
        if (isConnectionError(error.cause)) {
          return new HttpProblem(503, "UNAVAILABLE", "the database is unreachable; try again later", { headers: { "retry-after": "5" } });
        }
        return internal();
      case "DATABASE_READ_ONLY":
        return new HttpProblem(503, "DATABASE_READ_ONLY", "the database refuses writes right now (it is read-only, as during a failover); try again later", {
          headers: { "retry-after": String(READ_ONLY_RETRY_AFTER_S) },
        });
      default:
        return internal();
    }
  }
  const fastifyError = error as Partial<FastifyError>;
  switch (fastifyError.code) {
    // Refused by the router, before any route ran. The messages name the rule, never the URL sent.
    case "FST_ERR_BAD_URL":
      return new HttpProblem(400, "MALFORMED_REQUEST", "the request path is not valid percent-encoded UTF-8");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return new HttpProblem(414, "MALFORMED_REQUEST", `a path segment is longer than ${MAX_HTTP_PATH_SEGMENT_LENGTH} characters`);
    // Refused by Node's HTTP parser (see clientErrorHandler): the bytes never became a request.
    case "HPE_HEADER_OVERFLOW":
      return new HttpProblem(431, "MALFORMED_REQUEST", `the request line and headers are larger than the limit of ${maxHeaderSize} bytes`);
    case "HPE_INVALID_CONTENT_LENGTH":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return new HttpProblem(400, "MALFORMED_REQUEST", "Content-Length is not one whole number");
    case "HPE_INVALID_CHUNK_SIZE":
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new HttpProblem(400, "MALFORMED_REQUEST", "the chunked request body is malformed");
    case "HPE_INVALID_TRANSFER_ENCODING":
      return new HttpProblem(400, "MALFORMED_REQUEST", "Transfer-Encoding must end in chunked and must not come with Content-Length");
    case "HPE_INVALID_HEADER_TOKEN":
      return new HttpProblem(400, "MALFORMED_REQUEST", "a request header is malformed");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new HttpProblem(408, "TIMEOUT", "the request was not received completely in time");
    case "FST_ERR_HANDLER_TIMEOUT":
      // The work may still complete: the handler is not stopped, only answered for.
      return new HttpProblem(503, "TIMEOUT", `the request did not complete within ${timeoutMs} ms; it may still take effect, so check before retrying`, {
        headers: { "retry-after": "1" },
      });
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new HttpProblem(413, "PAYLOAD_TOO_LARGE", `request body is larger than the limit of ${bodyLimit} bytes`);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new HttpProblem(415, "UNSUPPORTED_MEDIA_TYPE", "request body must be JSON (Content-Type: application/json)");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
    case "FST_ERR_CTP_INVALID_TYPE":
      return new HttpProblem(400, "MALFORMED_REQUEST", fastifyError.message ?? "malformed request");
  }
  if (typeof fastifyError.code === "string" && fastifyError.code.startsWith("HPE_")) {
    return new HttpProblem(400, "MALFORMED_REQUEST", "the request is not well-formed HTTP/1.1");
  }
  // Other framework errors with a client status (e.g. a bad header) carry safe, fixed messages.
  const status = fastifyError.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500 && typeof fastifyError.code === "string" && fastifyError.code.startsWith("FST_")) {
    return new HttpProblem(status, "MALFORMED_REQUEST", fastifyError.message ?? "malformed request");
  }
  return internal();
}

function internal(): HttpProblem {
  return new HttpProblem(500, "INTERNAL", "internal error; the server log has the details under this request's id");
}

/** Send a problem as `application/problem+json`, with the request's id and its path and query as `instance`. */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, problem: HttpProblem): FastifyReply {
  return reply.code(problem.status).headers(problem.headers).type(PROBLEM_CONTENT_TYPE).send(problem.toBody(request.id, request.url));
}

/**
 * Fastify's `frameworkErrors`: a URL the router refused (bad percent-encoding,
 * a segment over MAX_HTTP_PATH_SEGMENT_LENGTH). Such a request runs no hooks,
 * so the request id header is set here.
 */
export function frameworkErrorHandler(limits: ProblemLimits) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const problem = toHttpProblem(error, limits);
    request.log.info({ code: problem.code, detail: problem.message }, "request refused");
    reply.header(REQUEST_ID_HEADER, request.id);
    return sendProblem(request, reply, problem);
  };
}

/**
 * Fastify's `clientErrorHandler` (Node's `clientError` event): bytes that did
 * not parse as an HTTP request (headers too large, a bad Content-Length or
 * chunked encoding, a timeout). There is no request, so the answer is
 * written to the socket as it is, and the connection closed: what follows
 * the bad bytes cannot be framed. It carries a request id as every answer
 * does (logged with the refusal), and as `instance` the request's target
 * when its request line was read, else `urn:uuid:` and that id.
 */
export function clientErrorHandler(limits: ProblemLimits) {
  return function (this: FastifyInstance, error: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Duplex): void {
    // A reset connection has no one to answer.
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const problem = toHttpProblem(error, limits);
    const { target, requestId: sent } = readRequestHead(error.rawPacket);
    const requestId = sent ?? randomUUID();
    // Without a request line the id is a fresh UUID: the occurrence is named by it.
    const instance = target ?? `urn:uuid:${requestId}`;
    this.log.debug({ code: problem.code, detail: problem.message, parserCode: error.code, requestId }, "malformed request refused");
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify(problem.toBody(requestId, instance));
    socket.end(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? "Error"}\r\n` +
        `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${REQUEST_ID_HEADER}: ${requestId}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  };
}

// A request line as HTTP/1.1 frames it, its target printable ASCII.
const REQUEST_LINE = /^[A-Z]{1,20} ([\x21-\x7e]{1,8192}) HTTP\/1\.[01]\r?\n/;
const REQUEST_ID_LINE = new RegExp(`^${REQUEST_ID_HEADER}:[ \\t]*(.*?)[ \\t]*$`, "im");

/**
 * What the bytes the parser refused say about their request, when they
 * start with a request line: its target, and the client's request id when
 * it is sane (as `requestIdFor` takes it) and the headers before the fault were read whole.
 */
function readRequestHead(raw: unknown): { target?: string; requestId?: string } {
  // Node hands over the bytes of the packet it refused (typed by Fastify as their JSON form).
  if (!Buffer.isBuffer(raw)) return {};
  const text = raw.subarray(0, 16_384).toString("latin1");
  const line = REQUEST_LINE.exec(text);
  if (!line) return {};
  const headEnd = text.indexOf("\r\n\r\n");
  const sent = headEnd < 0 ? undefined : REQUEST_ID_LINE.exec(text.slice(0, headEnd))?.[1];
  const requestId = sent !== undefined && isSaneRequestId(sent) ? sent : undefined;
  return { target: line[1]!, ...(requestId === undefined ? {} : { requestId }) };
}

/** Install the error handler and the 404 handler on an app. */
export function installErrorHandling(app: FastifyInstance, limits: ProblemLimits): void {
  app.setErrorHandler((error, request, reply) => {
    const problem = toHttpProblem(error, limits);
    // A bug gets the whole error (stack, cause); an outage or timeout is an
    // operational warning; a refused request is routine.
    if (problem.code === "INTERNAL") request.log.error({ err: error }, "request failed");
    else if (problem.status >= 500) request.log.warn({ code: problem.code, detail: problem.message, err: error }, "request not served");
    else request.log.info({ code: problem.code, detail: problem.message }, "request refused");
    return sendProblem(request, reply, problem);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(request, reply, new HttpProblem(404, "NOT_FOUND", `no route ${request.method} ${request.url.split("?")[0]}`)),
  );
}
