import { z } from "zod";

// The zod schema of a job count as JSON (the response schema of
// `GET /v1/jobs/count`), and its JSON type; the mapping is in
// job-count-json.ts, which loads without zod for the CLI.

/** How many jobs match a search. */
export const jobCountShape = z.object({
  count: z.number().int().describe("exact when estimated is false; else the planner's estimate, never below what was counted"),
  estimated: z.boolean().describe("true above the exact-count limit (10,000), or when counting did not finish within the search time bound"),
});

/** A job count, as JSON. */
export type JobCountJson = z.output<typeof jobCountShape>;
