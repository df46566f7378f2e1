import { z } from "zod";
import type { JobCount } from "../core/overview.js";

// A job count as JSON, defined once: the zod schema (the response schema of
// `GET /v1/jobs/count`) and the mapping from the library's type, which
// `conveyor jobs count --json` prints too.

/** How many jobs match a search. */
export const jobCountShape = z.object({
  count: z.number().int().describe("exact when estimated is false; else the planner's estimate, never below what was counted"),
  estimated: z.boolean().describe("true above the exact-count limit (10,000), or when counting did not finish within the search time bound"),
});

/** A job count, as JSON. */
export type JobCountJson = z.output<typeof jobCountShape>;

/** A count as JSON. */
export function jobCountJson(count: JobCount): JobCountJson {
  return { count: count.count, estimated: count.estimated };
}
