// What docs/enqueueing.md's blocks assume (test/docs/doc-examples.ts).
import { type Conveyor, defineJob } from "conveyor-jobs";
import type pg from "pg";
import { z } from "zod";

export declare const conveyor: Conveyor;
export const sendEmail = defineJob({ kind: "email.send", schema: z.object({ to: z.email(), subject: z.string(), body: z.string() }), handler: async () => {} });
export declare const payload: { to: string; subject: string; body: string };
export const syncAccount = defineJob({ kind: "account.sync", schema: z.object({ id: z.number() }), handler: async () => {} });
export const reindex = defineJob({ kind: "doc.reindex", schema: z.object({ doc: z.number(), rev: z.number() }), handler: async () => {} });
export declare const client: pg.PoolClient;
export declare const traceparent: string;
export declare const request: Request;
