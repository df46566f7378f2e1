import { createHash } from "node:crypto";
import { quoteIdent } from "./db.js";
import * as apiKeys from "./sql/api-keys.js";
import * as claims from "./sql/claims.js";
import * as cron from "./sql/cron.js";
import * as claimsLimited from "./sql/claims-limited.js";
import * as deadLetters from "./sql/dead-letters.js";
import * as jobs from "./sql/jobs.js";
import * as progress from "./sql/progress.js";
import * as queues from "./sql/queues.js";
import * as retention from "./sql/retention.js";
import * as queueSettings from "./sql/queue-settings.js";
import * as stats from "./sql/stats.js";
import * as transactionalCompletion from "./sql/transactional-completion.js";
import * as unique from "./sql/unique.js";
import * as workers from "./sql/workers.js";

const SOURCES = {
  ...jobs,
  ...claims,
  ...deadLetters,
  ...workers,
  ...apiKeys,
  ...queues,
  ...stats,
  ...cron,
  ...claimsLimited,
  ...progress,
  ...retention,
  ...queueSettings,
  ...transactionalCompletion,
  ...unique,
} as const;

type QueryName = {
  [K in keyof typeof SOURCES]: K extends `${string}_COLUMNS` ? never : (typeof SOURCES)[K] extends string ? K : never;
}[keyof typeof SOURCES];

/** A statement ready to run: its text for one schema, and a name for preparing it. */
export interface BoundQuery {
  name: string;
  text: string;
}

export type Queries = Readonly<Record<QueryName, BoundQuery>>;

/**
 * Every statement with the schema name substituted, quoted in this one place.
 * Statement names carry a hash of the schema so two schemas used from one
 * connection never share a prepared statement.
 */
export function bindQueries(schema: string): Queries {
  const quoted = quoteIdent(schema);
  const tag = createHash("sha1").update(schema).digest("hex").slice(0, 8);
  const bound: Record<string, BoundQuery> = {};
  for (const [name, text] of Object.entries(SOURCES)) {
    if (typeof text !== "string" || name.endsWith("_COLUMNS")) continue;
    bound[name] = { name: `conveyor_${tag}_${name}`, text: text.replaceAll("{{schema}}", quoted) };
  }
  return Object.freeze(bound) as Queries;
}
