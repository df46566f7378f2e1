import { ValidationError } from "./errors.js";
import { checkKnownFields } from "./validate.js";

/**
 * A W3C trace context (https://www.w3.org/TR/trace-context/) as the
 * `traceparent` and `tracestate` headers carry it. A job stores the one its
 * enqueue ran in, and each attempt's span links to it (docs/tracing.md).
 * Plain strings, so that neither the library's public types nor its users
 * need `@opentelemetry/api` for them.
 */
export interface TraceContext {
  /** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`. */
  traceparent: string;
  /** Vendor entries, `key=value` pairs separated by commas; omitted when there are none. */
  tracestate?: string;
}

/** A traceparent's fields, lower-case hex. */
export interface ParsedTraceparent {
  traceId: string;
  spanId: string;
  /** The trace flags as a number (bit 0: sampled). */
  flags: number;
}

// Version 00's layout. A later version may append fields after the flags;
// per the spec, a parser reads the version 00 fields and ignores the rest.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO = /^0+$/;
/** The longest tracestate kept: 32 entries of up to 256 characters each, with commas, fits well under it. */
const MAX_TRACESTATE_LENGTH = 8_192;

/** The fields of a valid traceparent; undefined for anything else (version ff, all-zero ids, bad shape). */
export function parseTraceparent(value: string): ParsedTraceparent | undefined {
  const match = TRACEPARENT.exec(value.trim());
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match;
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (ALL_ZERO.test(traceId!) || ALL_ZERO.test(spanId!)) return undefined;
  return { traceId: traceId!, spanId: spanId!, flags: Number.parseInt(flags!, 16) };
}

/**
 * A trace context from request headers (the HTTP API): undefined when there
 * is no valid `traceparent`, as the spec says a receiver then starts a new
 * trace. A `tracestate` travels only with a valid parent, and is dropped
 * when implausibly long.
 */
export function traceContextFromHeaders(traceparent: unknown, tracestate: unknown): TraceContext | undefined {
  if (typeof traceparent !== "string" || parseTraceparent(traceparent) === undefined) return undefined;
  const state = typeof tracestate === "string" ? tracestate.trim() : "";
  const context: TraceContext = { traceparent: traceparent.trim() };
  if (state !== "" && state.length <= MAX_TRACESTATE_LENGTH) context.tracestate = state;
  return context;
}

/** Refuse a trace context that is not one, naming the field, as every enqueue option is checked. */
export function checkTraceContext(value: TraceContext): void {
  checkKnownFields(value, { traceparent: true, tracestate: true }, "a field of a trace context", { path: "traceContext" });
  if (value === null || typeof value !== "object" || typeof value.traceparent !== "string" || parseTraceparent(value.traceparent) === undefined) {
    throw new ValidationError("traceContext.traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)", [
      { path: "traceContext.traceparent", message: "not a W3C traceparent" },
    ]);
  }
  if (value.tracestate !== undefined && (typeof value.tracestate !== "string" || value.tracestate.length > MAX_TRACESTATE_LENGTH)) {
    throw new ValidationError(`traceContext.tracestate must be a string of at most ${MAX_TRACESTATE_LENGTH} characters`, [
      { path: "traceContext.tracestate", message: "not a tracestate" },
    ]);
  }
}

/** The JSON text stored in `jobs.trace_context`. */
export function encodeTraceContext(value: TraceContext): string {
  return JSON.stringify(value.tracestate ? { traceparent: value.traceparent, tracestate: value.tracestate } : { traceparent: value.traceparent });
}
