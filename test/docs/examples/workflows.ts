// What docs/workflows.md's blocks assume (test/docs/doc-examples.ts).
import { type Conveyor, defineJob } from "conveyor-jobs";
import { z } from "zod";

export { defineJob } from "conveyor-jobs";
export { z } from "zod";
export declare const conveyor: Conveyor;
export declare const payments: { charge(orderId: string, amountCents: number): Promise<{ id: string }> };
export declare const stock: { reserve(orderId: string): Promise<void> };
export declare const mail: { confirm(orderId: string): Promise<void> };
export declare const warehouse: { ship(orderId: string, options: { chargeId: string }): Promise<void> };
export const buildReport = defineJob({ kind: "report.build", schema: z.object({ month: z.string() }), handler: async () => {} });
export const emailReport = defineJob({ kind: "report.email", schema: z.object({ month: z.string() }), handler: async () => {} });
export const importRow = defineJob({ kind: "import.row", schema: z.object({ line: z.number() }), handler: async () => {} });
export declare const rows: Array<{ line: number }>;
export declare const importId: string;
export declare function notify(importId: string, summary: { total: number; succeeded: number; failed: number; failedJobIds: string[] }): Promise<void>;
