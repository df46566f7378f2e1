import { STATUS_CODES } from "node:http";
import type { ValidationIssue } from "conveyor-jobs";

/** Media type of every error response (RFC 9457). */
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/**
 * Stable machine-readable codes carried in the `code` member of problem
 * bodies, so clients branch on them rather than on the wording of `detail`.
 */
export type ProblemCode =
  | "MALFORMED_REQUEST"
  | "INVALID_PARAMETER"
  | "VALIDATION"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "CONFLICT"
  | "IDEMPOTENCY_CONFLICT"
  | "UNIQUE_CONFLICT"
  | "ALREADY_TERMINAL"
  | "SEARCH_TIMEOUT"
  | "PAYLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "TIMEOUT"
  | "UNAVAILABLE"
  | "DATABASE_READ_ONLY"
  | "INTERNAL";

/**
 * An RFC 9457 problem body. `type` is always `about:blank`, so `title` is
 * the HTTP status phrase; the precise cause is in `detail` and `code`.
 */
export interface ProblemBody {
  /** Always `about:blank`: `code` says which problem it is. */
  type: "about:blank";
  /** The HTTP status's title, e.g. `Conflict`. */
  title: string;
  /** The HTTP status code. */
  status: number;
  /** What went wrong, precisely, for a person. */
  detail: string;
  /** A stable code to branch on. */
  code: ProblemCode;
  /** The path and query of the request that failed. */
  instance?: string;
  /** The request's id (the `x-request-id` header), for logs. */
  requestId?: string;
  /** Each offending field, for validation problems. */
  errors?: readonly ValidationIssue[];
  /** Further members some problems carry (e.g. `jobStatus` for ALREADY_TERMINAL). */
  [extension: string]: unknown;
}

/**
 * An error an HTTP handler throws to answer with a specific problem. The
 * one error handler turns it (and every other error) into problem+json.
 */
export class HttpProblem extends Error {
  readonly status: number;
  readonly code: ProblemCode;
  readonly errors: readonly ValidationIssue[] | undefined;
  readonly extensions: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    code: ProblemCode,
    detail: string,
    options: { errors?: readonly ValidationIssue[]; extensions?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = "HttpProblem";
    this.status = status;
    this.code = code;
    this.errors = options.errors;
    this.extensions = options.extensions ?? {};
    this.headers = options.headers ?? {};
  }

  /** The body to send, for a given request: the RFC 9457 members, then the extensions (which cannot replace them). */
  toBody(requestId?: string, instance?: string): ProblemBody {
    const body: ProblemBody = {
      type: "about:blank",
      title: STATUS_CODES[this.status] ?? "Error",
      status: this.status,
      detail: this.message,
      code: this.code,
      ...(instance === undefined ? {} : { instance }),
      ...(requestId === undefined ? {} : { requestId }),
      ...(this.errors && this.errors.length > 0 ? { errors: this.errors } : {}),
    };
    for (const [name, value] of Object.entries(this.extensions)) if (!(name in body)) body[name] = value;
    return body;
  }
}
