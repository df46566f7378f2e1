// What docs/jobs.md's blocks assume (test/docs/doc-examples.ts).
import type { Conveyor } from "conveyor-jobs";

export { defineJob } from "conveyor-jobs";
export { z } from "zod";
export declare const conveyor: Conveyor;
export declare function readRows(file: string): Promise<Array<{ email: string; name: string }>>;
export declare function validate(row: { email: string; name: string }): Promise<void>;
export declare const mailer: {
  sendBatch(
    messages: Array<{ to: string; subject: string; text: string; idempotencyKey: string }>,
    options: { signal: AbortSignal },
  ): Promise<{ status: number; retryAfterMs: number; results: Array<{ ok: boolean; id: string; code: string; message: string }> }>;
};
