// What docs/operations.md's blocks assume (test/docs/doc-examples.ts).
import type { AnyJobDefinition } from "conveyor-jobs";
import { z } from "zod";

export { Conveyor, defineJob } from "conveyor-jobs";
export declare const conveyor: import("conveyor-jobs").Conveyor;
export declare const jobs: AnyJobDefinition[];
export const schema = z.object({});
export const handler = async (): Promise<void> => {};
export const DAY = 86_400_000;
