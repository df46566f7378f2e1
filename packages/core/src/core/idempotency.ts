/**
 * The "same request" rule for idempotency keys, used by every enqueue path
 * (the library's `enqueue`/`enqueueMany` and, through them, the HTTP API).
 *
 * An idempotency key names one request. Reusing it answers with the job
 * that request created when the new request is the same, and is refused
 * (never merged) when it is not. A request is the same when every field
 * that says what the job *is* matches, each taken as resolved (a field left
 * out means the definition's value, so `{}` and `{ queue: <the default> }`
 * are the same request):
 *
 * | field         | compared | why                                                                 |
 * |---------------|----------|---------------------------------------------------------------------|
 * | kind          | yes      | a different handler is a different job                              |
 * | payload       | yes      | as JSON values: object key order does not matter                    |
 * | queue         | yes      | where the job runs, what pauses and limits apply to it              |
 * | priority      | yes      | when it runs relative to others                                     |
 * | maxAttempts   | yes      | how it fails                                                        |
 * | runAt/delayMs | no       | a retried "in 5 minutes" names a later instant, and the stored run  |
 * |               |          | time moves with every retry: there is nothing stable to compare     |
 * | unique        | no       | it governs the insert, not the job; the job keeps only its key, and |
 * |               |          | only while in its states                                            |
 * | tenant        | —        | part of the key itself (keys are per tenant)                        |
 *
 * The existing job is compared as it is now: a unique `replace` that since
 * rewrote its payload or priority makes the original request differ.
 */

/** The fields of an enqueue request that the rule compares, resolved against the job definition. */
export interface JobRequestFields {
  /** The job kind. */
  kind: string;
  /** The payload as a JSON value (parsed, not JSON text). */
  payload: unknown;
  /** The queue (the definition's when the request names none). */
  queue: string;
  /** The priority (the definition's when the request gives none). */
  priority: number;
  /** The attempts allowed (the definition's when the request gives none). */
  maxAttempts: number;
}

/** A field of `JobRequestFields` that differed. */
export type JobRequestField = keyof JobRequestFields;

const COMPARED: readonly JobRequestField[] = ["kind", "payload", "queue", "priority", "maxAttempts"];

/** The fields in which two requests differ, in a fixed order; empty when they are the same request. */
export function requestDifferences(requested: JobRequestFields, existing: JobRequestFields): JobRequestField[] {
  return COMPARED.filter((field) => (field === "payload" ? !sameJsonValue(requested.payload, existing.payload) : requested[field] !== existing[field]));
}

/** JSON value equality as jsonb sees it: object key order does not matter, array order does. */
export function sameJsonValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => sameJsonValue(item, other[i]));
  }
  // undefined members are absent in JSON, as JSON.stringify drops them.
  const entries = (value: object) => Object.entries(value).filter(([, member]) => member !== undefined);
  const left = entries(a);
  const right = new Map(entries(b));
  return left.length === right.size && left.every(([key, member]) => right.has(key) && sameJsonValue(member, right.get(key)));
}
