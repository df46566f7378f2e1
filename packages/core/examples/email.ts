import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { defineJob, PermanentError } from "conveyor-jobs";

/** Where the example "sends" mail: one .eml file per message, so it works on any machine. */
export const OUTBOX_DIR = join(process.cwd(), ".conveyor", "outbox");

/**
 * Send an email. This example writes RFC 5322 messages to a local outbox
 * directory; swap the write for your provider's API call. The job id is the
 * file name, so a retried attempt overwrites instead of duplicating.
 */
export const sendEmail = defineJob({
  kind: "email.send",
  schema: z.object({
    to: z.email(),
    subject: z.string().min(1).max(200),
    body: z.string().max(100_000),
  }),
  maxAttempts: 5,
  backoff: { baseMs: 2_000, capMs: 60_000 },
  timeoutMs: 10_000,
  async handler({ payload, job, log }) {
    if (payload.to.endsWith("@invalid.example")) throw new PermanentError(`undeliverable address ${payload.to}`);
    await mkdir(OUTBOX_DIR, { recursive: true });
    const message = [
      `Message-ID: <${job.id}@conveyor.local>`,
      `To: ${payload.to}`,
      `Subject: ${payload.subject}`,
      `Date: ${new Date().toUTCString()}`,
      "",
      payload.body,
    ].join("\r\n");
    const path = join(OUTBOX_DIR, `${job.id}.eml`);
    await writeFile(path, message);
    log.info({ path }, "email written to outbox");
    return { path };
  },
});
