// What docs/tracing.md's blocks assume (test/docs/doc-examples.ts).
import type { AnyJobDefinition } from "conveyor-jobs";

export { Conveyor } from "conveyor-jobs";
export declare const connectionString: string;
export declare const jobs: AnyJobDefinition[];
