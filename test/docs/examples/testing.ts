// What docs/testing.md's blocks assume (test/docs/doc-examples.ts). `t` and
// `client` are real when test/docs/examples.test.ts runs a block: it sets them first.
import { type Conveyor, defineJob } from "conveyor-jobs";
import type { TestConveyor } from "conveyor-jobs/testing";
import type pg from "pg";
import { z } from "zod";

export { createTestConveyor, runHandler, startHandler } from "conveyor-jobs/testing";
export const sendEmail = defineJob({ kind: "email.send", schema: z.object({ to: z.email(), subject: z.string(), body: z.string() }), handler: async () => {} });
export const signUp = defineJob({ kind: "user.signup", schema: z.object({ email: z.email() }), handler: async () => {} });
export const resizeImage = defineJob({ kind: "image.resize", schema: z.object({ url: z.url() }), handler: async () => {} });
export declare const url: string;
export declare function registerUser(conveyor: Conveyor, email: string): Promise<void>;

export let t: TestConveyor;
export let client: pg.ClientBase;
/** Give the blocks that run their test Conveyor and database client. */
export function provide(values: { t: TestConveyor; client: pg.ClientBase }): void {
  ({ t, client } = values);
}
