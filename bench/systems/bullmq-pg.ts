/**
 * BullMQ on its PostgreSQL backend (`createPostgresBackend`, shipped with
 * BullMQ 6.7): the same Queue and Worker code as `bullmq`, its jobs in
 * tables of a schema instead of Redis keys. It runs on the PostgreSQL the
 * bench starts itself (lib/private-postgres.ts), started when this system
 * is selected, each run in a fresh database dropped after.
 */
import { createPostgresBackend, DEFAULT_SCHEMA, type PostgresPoolConfig, withBackend } from "bullmq";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";
import { sharedPrivatePostgres } from "../lib/private-postgres.js";
import { bullmqSystem } from "./bullmq.js";

/** The private server's admin URL, or why there is none. */
async function privateServerUrl(): Promise<string | { unavailable: string }> {
  const started = await sharedPrivatePostgres();
  return typeof started === "string" ? { unavailable: `no PostgreSQL of the bench's own: ${started}` } : started.url;
}

/**
 * Connections of each Queue's or Worker's pool: 25, as graphile-worker's and
 * pg-boss's pools here, where pg's default of 10 held the worker's 100 slots
 * back (each completion is a query of its own on a pooled connection).
 * (BENCH_BULLMQ_PG_POOL overrides it, for tuning.)
 */
const POOL_SIZE = Number(process.env.BENCH_BULLMQ_PG_POOL ?? 25);

/** The backend's connection to a database: its default schema, a pool of POOL_SIZE. */
const reach = (url: string, migrate = false): PostgresPoolConfig => ({ connectionString: url, schema: DEFAULT_SCHEMA, max: POOL_SIZE, ...(migrate ? { migrate } : {}) });

export const { system, startWorker } = bullmqSystem({
  name: "bullmq-pg",
  classes: withBackend(createPostgresBackend),
  store:
    `PostgreSQL (createPostgresBackend): the server the bench starts itself (initdb's defaults, autovacuum on), a fresh database per run ` +
    `with the backend's tables in its default schema "${DEFAULT_SCHEMA}", migrated by the client's connection (migrate: true); a pool of ${POOL_SIZE} per Queue or Worker, ` +
    `plus a dedicated LISTEN connection for a Worker; the database dropped after`,
  fillsFinished: false,
  redis: false,
  async unavailable() {
    const url = await privateServerUrl();
    return typeof url === "string" ? null : url.unavailable;
  },
  async open(tag, options) {
    const server = options.server ?? (await privateServerUrl());
    if (typeof server !== "string") throw new Error(server.unavailable);
    const db = await createDatabase(`bullmqpg_${tag}`, server);
    return {
      target: db.url,
      database: db.name,
      schema: DEFAULT_SCHEMA,
      jobTables: [`${DEFAULT_SCHEMA}.job`],
      options: { connection: reach(db.url, true) },
      settle: () => analyzeDatabase(db.url),
      drop: () => db.drop(),
    };
  },
  reach: (target) => ({ connection: reach(target) }),
});
