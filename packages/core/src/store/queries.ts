import { createHash } from "node:crypto";
import { quoteIdent } from "./db.js";
import * as apiKeys from "./sql/api-keys.js";
import * as attempts from "./sql/attempts.js";
import * as batches from "./sql/batches.js";
import * as bulkActions from "./sql/bulk-actions.js";
import * as claims from "./sql/claims.js";
import * as clock from "./sql/clock.js";
import * as cron from "./sql/cron.js";
import * as claimsLimited from "./sql/claims-limited.js";
import * as deadLetters from "./sql/dead-letters.js";
import * as flows from "./sql/flows.js";
import * as jobs from "./sql/jobs.js";
import * as keyLimits from "./sql/key-limits.js";
import * as leases from "./sql/leases.js";
import * as progress from "./sql/progress.js";
import * as queues from "./sql/queues.js";
import * as retention from "./sql/retention.js";
import * as queueSettings from "./sql/queue-settings.js";
import * as stats from "./sql/stats.js";
import * as steps from "./sql/steps.js";
import * as tenantIndex from "./sql/tenant-index.js";
import * as transactionalCompletion from "./sql/transactional-completion.js";
import * as unique from "./sql/unique.js";
import * as waits from "./sql/waits.js";
import * as workers from "./sql/workers.js";

const SOURCES = {
  ...jobs,
  ...claims,
  ...leases,
  ...attempts,
  ...clock,
  ...deadLetters,
  ...flows,
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
  ...tenantIndex,
  ...keyLimits,
  ...bulkActions,
  ...waits,
  ...steps,
  ...batches,
} as const;

type QueryName = {
  [K in keyof typeof SOURCES]: K extends `${string}_COLUMNS` ? never : (typeof SOURCES)[K] extends string ? K : never;
}[keyof typeof SOURCES];

/**
 * The statements prepared once per connection on Conveyor's pool, whose plan
 * PostgreSQL may reuse (a generic plan, planned without the values) once it
 * has planned five for their values and found the reusable one no dearer.
 * Each is on every job's path, and planning was a large share of it (over a
 * quarter of a single enqueue's server time). Their plans do not depend on the values: each finds its rows
 * by key or through one partial index, whatever the arrays hold;
 * test/statement-plans.test.ts checks every one's generic plan on a filled
 * store, before and after ANALYZE.
 *
 * Every other statement is sent unnamed and planned for its values at each
 * call, because its plan does depend on them: optional filters
 * (`$1 IS NULL OR tenant = $1`), and above all the claim. The claim's generic
 * plan cannot know its LIMIT; on a table never analyzed it read and sorted
 * every ready job, and for a worker bound to a small queue beside a deep one
 * it walked the deep queue's jobs. The worker runs its claims on a connection
 * of its own (claim-store.ts): planned once for a worker over every queue,
 * with a claim written so its plan cannot depend on the values
 * (jobClaimAllQueues), and for their values at every call otherwise.
 */
const PLANNED_ONCE: ReadonlySet<string> = new Set([
  "jobInsert",
  "jobInsertKeyless",
  "jobInsertMany",
  "jobInsertManyKeyless",
  "queuesWake",
  "jobHeartbeat",
  "jobComplete",
  "jobEndAttempts",
  "jobLockExpired",
  "jobEndExpired",
] satisfies QueryName[]);

/** A statement ready to run: its text for one schema, its name, and whether Conveyor's pool prepares it. */
export interface BoundQuery {
  /** Unique per schema and statement: two schemas used from one connection never share a prepared statement. */
  name: string;
  text: string;
  /** True: prepared once per connection, its plan reusable (PLANNED_ONCE). False: sent unnamed, planned for its values at each call. */
  prepared: boolean;
}

export type Queries = Readonly<Record<QueryName, BoundQuery>>;

/**
 * Every statement with the schema name substituted, quoted in this one
 * place. `pooled`: connections go through a pooler in transaction mode,
 * where a statement prepared on one server connection is unknown on the
 * next, so none is prepared (each is sent unnamed).
 */
export function bindQueries(schema: string, pooled = false): Queries {
  const quoted = quoteIdent(schema);
  const tag = createHash("sha1").update(schema).digest("hex").slice(0, 8);
  const bound: Record<string, BoundQuery> = {};
  for (const [name, text] of Object.entries(SOURCES)) {
    if (typeof text !== "string" || name.endsWith("_COLUMNS")) continue;
    bound[name] = { name: `conveyor_${tag}_${name}`, text: text.replaceAll("{{schema}}", quoted), prepared: !pooled && PLANNED_ONCE.has(name) };
  }
  return Object.freeze(bound) as Queries;
}
