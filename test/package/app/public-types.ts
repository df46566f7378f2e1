// Compiled in a fresh app that installed the packed core package alone
// (see packed-app.test.ts), under `strict`. Each `@ts-expect-error` must meet an
// error: a public type that silently became `any` leaves the directive
// unused, which is itself an error, so the compile fails.
import { Conveyor, defaults, defineJob, IdempotencyConflictError, type JobStatus } from "conveyor-jobs";
import { createTestConveyor, runHandler } from "conveyor-jobs/testing";
import { z } from "zod";

export const resizeImage = defineJob({
  kind: "image.resize",
  schema: z.object({ url: z.url(), width: z.number().int() }),
  handler({ payload }) {
    const width: number = payload.width;
    // @ts-expect-error the schema has no `height`: payload is inferred from it, not `any`
    const height = payload.height;
    // @ts-expect-error `url` is a string
    const url: number = payload.url;
    return { width, height, url };
  },
});

export async function enqueueAndRead(conveyor: Conveyor): Promise<JobStatus | undefined> {
  const { id, payload } = await conveyor.enqueue(resizeImage, { url: "https://example.com/a.png", width: 640 });
  const enqueuedWidth: number = payload.width;
  // @ts-expect-error the enqueued job's payload is the schema's output, not `unknown` or `any`
  const enqueuedHeight: number = payload.height;
  void [enqueuedWidth, enqueuedHeight];
  // @ts-expect-error `width` must be a number
  await conveyor.enqueue(resizeImage, { url: "https://example.com/a.png", width: "640" });
  // @ts-expect-error `url` is required
  await conveyor.enqueue(resizeImage, { width: 640 });

  const job = await conveyor.getJob(id);
  // @ts-expect-error getJob answers null for an unknown id
  job.status;
  if (!job) return undefined;
  // @ts-expect-error `status` is a union of the job states, and "done" is none of them
  if (job.status === "done") return undefined;
  // @ts-expect-error a status is not a number
  const count: number = job.status;
  void count;
  return job.status;
}

// `defaults` holds the defaults and limits of options, not internal tuning; the database clock is internal.
export const publicSurface = (conveyor: Conveyor, error: unknown): [number, string | null] => {
  // @ts-expect-error CLAIM_MIN_FRESH_IDS is internal tuning, not exported
  void defaults.CLAIM_MIN_FRESH_IDS;
  // @ts-expect-error the client's database clock is internal
  void conveyor.clock;
  return [defaults.DEFAULT_MAX_ATTEMPTS, error instanceof IdempotencyConflictError ? error.jobId : null];
};

// conveyor-jobs/testing and the tracing options compile in an app that has
// neither @opentelemetry/api nor a test runner installed.
export async function testHelpers(): Promise<string> {
  const { outcome } = await runHandler(resizeImage, { url: "https://example.com/a.png", width: 640 });
  // @ts-expect-error `width` must be a number, in tests too
  await runHandler(resizeImage, { url: "https://example.com/a.png", width: "640" });
  const t = await createTestConveyor({ jobs: [resizeImage], tracing: { attempts: "child" } });
  await t.expectEnqueued(resizeImage, { payload: { width: 640 } });
  await t.close();
  // @ts-expect-error attempts is "link" or "child"
  new Conveyor({ connectionString: "postgres://", tracing: { attempts: "sideways" } });
  return outcome;
}
