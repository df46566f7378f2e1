import { z } from "zod";
import { defineJob } from "../../packages/core/src/core/define-job.js";

/**
 * Job kinds the foundation tests enqueue. Handlers never run here (no worker),
 * so they do nothing.
 */

/** A zod object that transforms its input: what gets stored is the parsed output. */
export const sendEmail = defineJob({
  kind: "email.send",
  schema: z.object({
    to: z.string().trim().toLowerCase().pipe(z.email()),
    subject: z.string().default("(no subject)"),
  }),
  queue: "mail",
  priority: 5,
  maxAttempts: 7,
  handler: async () => {},
});

/** Accepts any value under `value`, so the JSON encoder (not the schema) has the last word. */
export const anyValue = defineJob({
  kind: "any.value",
  schema: z.object({ value: z.unknown() }),
  handler: async () => {},
});

/** Keeps the caller's key order (zod records do), for payload-equality tests. */
export const counters = defineJob({
  kind: "counters",
  schema: z.record(z.string(), z.number()),
  handler: async () => {},
});

/** Numbered items, for bulk and paging tests. */
export const item = defineJob({
  kind: "item",
  schema: z.object({ n: z.number().int() }),
  handler: async () => {},
});

export const allTestJobs = [sendEmail, anyValue, counters, item];
