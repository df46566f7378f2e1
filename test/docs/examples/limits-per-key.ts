// What docs/limits-per-key.md's blocks assume (test/docs/doc-examples.ts).
import type { Conveyor } from "conveyor-jobs";

export declare const conveyor: Conveyor;
