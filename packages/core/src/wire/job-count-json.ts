import type { JobCount } from "../core/overview.js";
import type { JobCountJson } from "./job-count-shape.js";

// A job count as JSON, defined once: the zod schema (job-count-shape.ts)
// and the mapping from the library's type here, which
// `conveyor jobs count --json` prints too.

export type { JobCountJson } from "./job-count-shape.js";

/** A count as JSON. */
export function jobCountJson(count: JobCount): JobCountJson {
  return { count: count.count, estimated: count.estimated };
}
