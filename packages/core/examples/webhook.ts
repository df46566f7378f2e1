import { createHmac } from "node:crypto";
import { z } from "zod";
import { defineJob, PermanentError } from "conveyor-jobs";

/**
 * Where the signing secret comes from. Keep secrets out of payloads: payloads
 * are stored, listed by the API and shown in the dashboard. `conveyor dev`
 * sets this for its worker and its local receiver.
 */
export const WEBHOOK_SECRET_ENV = "CONVEYOR_WEBHOOK_SECRET";

/** Per-request time limit; the job's own `timeoutMs` is a little longer. */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * The signature, in the style of Standard Webhooks: HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>`, base64, sent as
 * `webhook-signature: v1,<signature>`. The receiver recomputes it with the
 * shared secret, compares in constant time, and refuses old timestamps (so a
 * captured request cannot be replayed later).
 */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac("sha256", secret).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

/**
 * Deliver a webhook: a real HTTP POST of `{ id, event, data }` as JSON,
 * signed with the shared secret.
 *
 * - 2xx: delivered; the status and time taken are kept as the job's result.
 * - 5xx, 408, 429, a timeout or a network error: thrown, so the job retries
 *   with exponential backoff (1 s, 2 s, 4 s… up to 1 min; 8 attempts).
 * - any other 4xx: the receiver refused this delivery and will refuse it
 *   again, so `PermanentError` sends it straight to the dead-letter queue.
 *
 * `webhook-id` is the job id on every attempt, so a receiver can drop a
 * delivery it already processed (an attempt whose answer was lost is sent again).
 *
 * Only http(s) URLs are accepted. In production, decide who may name the
 * URL: a job that POSTs wherever its payload says can reach your internal
 * network (SSRF); keep an allow-list or resolve and check the address.
 */
export const deliverWebhook = defineJob({
  kind: "webhook.deliver",
  schema: z.object({
    url: z.url({ protocol: /^https?$/ }),
    event: z.string().min(1).max(200),
    data: z.unknown(),
  }),
  queue: "webhooks",
  maxAttempts: 8,
  backoff: { baseMs: 1_000, capMs: 60_000 },
  timeoutMs: REQUEST_TIMEOUT_MS + 2_000,
  async handler({ payload, job, signal, log }) {
    const secret = process.env[WEBHOOK_SECRET_ENV];
    if (!secret) throw new PermanentError(`${WEBHOOK_SECRET_ENV} is not set: the worker has no secret to sign webhooks with`);
    const body = JSON.stringify({ id: job.id, event: payload.event, data: payload.data ?? null });
    const timestamp = Math.floor(Date.now() / 1000);
    const started = performance.now();
    let response: Response;
    try {
      response = await fetch(payload.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "conveyor-webhooks/1",
          "webhook-id": job.id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": signWebhook(secret, job.id, timestamp, body),
        },
        body,
        redirect: "manual", // a redirect could lead the signed body elsewhere
        signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
      });
    } catch (error) {
      signal.throwIfAborted(); // cancelled, lease lost or shutting down: say so, not "network error"
      throw new Error(`POST ${payload.url} failed: ${(error as Error).message}`, { cause: error });
    }
    await response.body?.cancel(); // the answer's body is not needed; free the connection
    const ms = Math.round(performance.now() - started);
    if (response.ok) {
      log.info({ url: payload.url, status: response.status, ms }, "webhook delivered");
      return { status: response.status, ms };
    }
    const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
    const message = `POST ${payload.url} answered ${response.status}`;
    if (!retryable) throw new PermanentError(`${message}; not retrying a refusal`);
    throw new Error(`${message}; will retry`);
  },
});
