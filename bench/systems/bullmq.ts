import { Queue, Worker } from "bullmq";
import { REDIS_HOST, REDIS_PORT, redisUnavailable } from "../lib/redis.js";
import type { BenchSystem, Payload, StartWorker } from "./system.js";

const QUEUE = "bench";
/** BullMQ runs this many jobs at once in one worker (docs.bullmq.io/guide/workers/concurrency). */
const CONCURRENCY = 100;

const connection = { host: REDIS_HOST, port: REDIS_PORT, maxRetriesPerRequest: null };

export const system: BenchSystem = {
  name: "bullmq",
  settings: {
    worker: `one Worker, concurrency ${CONCURRENCY}; lock renewal and stalled-job checks at their defaults; completed jobs kept (default)`,
    enqueue: "Queue.add() one at a time; addBulk() for batches",
    store: "the machine's Redis on 127.0.0.1:6379, each run under its own key prefix, obliterated after",
  },
  unavailable() {
    return redisUnavailable();
  },
  async open(tag) {
    const prefix = `bench_bullmq_${process.pid}_${tag}`;
    const queue = new Queue<Payload>(QUEUE, { connection, prefix });
    await queue.waitUntilReady();
    return {
      target: prefix,
      async enqueueOne(payload) {
        await queue.add("noop", payload);
      },
      async enqueueMany(payloads) {
        await queue.addBulk(payloads.map((data) => ({ name: "noop", data })));
      },
      async settle() {},
      async unfinished() {
        const counts = await queue.getJobCounts("wait", "active", "delayed", "prioritized", "waiting-children");
        return Object.values(counts).reduce((sum, count) => sum + count, 0);
      },
      async close() {
        await queue.obliterate({ force: true });
        await queue.close();
      },
    };
  },
};

export const startWorker: StartWorker = async (target, _variant, onJob) => {
  const worker = new Worker<Payload>(
    QUEUE,
    async (job) => {
      onJob(job.data);
    },
    { connection, prefix: target, concurrency: CONCURRENCY },
  );
  worker.on("error", (error) => console.error(`bullmq: ${error.message}`));
  await worker.waitUntilReady();
  return {
    async stop() {
      await worker.close();
    },
  };
};
