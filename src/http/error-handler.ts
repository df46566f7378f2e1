import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { READ_ONLY_RETRY_AFTER_S } from "../core/defaults.js";
import { ConveyorError, ValidationError } from "../core/errors.js";
import { isConnectionError } from "../store/pg-errors.js";
import { HttpProblem, PROBLEM_CONTENT_TYPE } from "./problem.js";
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

/** Send a problem as `application/problem+json`. */
export function sendProblem(request: FastifyRequest, reply: FastifyReply, problem: HttpProblem): FastifyReply {
  return reply
    .code(problem.status)
    .headers(problem.headers)
    .type(PROBLEM_CONTENT_TYPE)
    .send(problem.toBody(request.id, request.url));
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
