// What docs/cron.md's blocks assume (test/docs/doc-examples.ts).
export { defineJob } from "conveyor-jobs";
export { z } from "zod";
