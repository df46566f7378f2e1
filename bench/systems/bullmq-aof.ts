/**
 * BullMQ on a Redis that keeps every write on disk within about a second:
 * the durable peer of the PostgreSQL systems (which fsync at commit), where
 * the machine's Redis may keep nothing. The bench starts that Redis itself
 * when this system is selected, and stops it when it ends (lib/redis-server.ts).
 */
import { startRedisServer } from "../lib/redis-server.js";
import { bullmqSystem, redisStore } from "./bullmq.js";

/** AOF on, fsynced once a second (Redis's default AOF policy); no RDB snapshots. */
export const AOF_OPTIONS = ["--appendonly", "yes", "--appendfsync", "everysec", "--save", ""];

/** The server, started by the first call (the bench's availability check), then the same one. */
let server: ReturnType<typeof startRedisServer> | null = null;

/** The port of this system's Redis, started on first use; or why it could not start. */
export async function aofRedisPort(): Promise<number | string> {
  server ??= startRedisServer(AOF_OPTIONS);
  const started = await server;
  return typeof started === "string" ? started : started.port;
}

export const { system, startWorker } = bullmqSystem(
  redisStore({
    name: "bullmq-aof",
    redisPort: aofRedisPort,
    store:
      "a Redis the bench starts (redis-server on a free port of 127.0.0.1, a fresh directory) with appendonly yes, appendfsync everysec, " +
      "no RDB (save \"\"); each run under its own key prefix, obliterated after",
  }),
);
