import { FlowProducer, type FlowJob, Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { chunkRanges } from "../lib/chunks.js";
import { REDIS_HOST, REDIS_PORT, redisUnavailable } from "../lib/redis.js";
import type { BenchSystem, Payload, StartWorker, SystemModule, SystemName, WorkflowGraph } from "./system.js";

const QUEUE = "bench";
/** BullMQ runs this many jobs at once in one worker (docs.bullmq.io/guide/workers/concurrency). */
const CONCURRENCY = 100;

/** A connection to the Redis on 127.0.0.1:`port`, as BullMQ's workers need it (commands wait through reconnects). */
const connection = (port: number) => ({ host: REDIS_HOST, port, maxRetriesPerRequest: null });

/** Finished jobs written per pipeline by `fillFinished`. */
const FINISHED_CHUNK = 10_000;
/** Ids of filled finished jobs: outside BullMQ's numeric counter, so no job enqueued later takes one. */
const finishedId = (n: number) => `finished-${n}`;

export interface BullmqOptions {
  name: Extract<SystemName, "bullmq" | "bullmq-aof">;
  /**
   * The port of its Redis on 127.0.0.1, or why there is none. Called first
   * by `unavailable()`, so a Redis the bench runs itself is started only for
   * a selected system, then by every `open()`: it must return the same port.
   */
  redisPort(): Promise<number | string>;
  /** The `store` line of the settings: which Redis, and what it keeps on disk. */
  store: string;
}

/**
 * BullMQ on one Redis: the same settings, workloads and worker whatever the
 * Redis. A worker child finds the store from its target alone,
 * `<port>:<prefix>`, so it needs nothing else from this process.
 */
export function bullmqSystem({ name, redisPort, store }: BullmqOptions): SystemModule {
  async function port(): Promise<number> {
    const port = await redisPort();
    if (typeof port === "string") throw new Error(port);
    return port;
  }
  const system: BenchSystem = {
    name,
    fillsFinished: true,
    settings: {
      worker: `one Worker, concurrency ${CONCURRENCY}; lock renewal and stalled-job checks at their defaults; completed jobs kept (default)`,
      enqueue: "Queue.add() one at a time; addBulk() for batches",
      workflows: "FlowProducer.add() of the graph as a tree (a parent waits for its children; a job has at most one parent, so graphs where a job has two dependents are not expressible)",
      store,
    },
    async unavailable() {
      const port = await redisPort();
      return typeof port === "string" ? port : redisUnavailable(port);
    },
    async open(tag) {
      const redisAt = await port();
      const prefix = `bench_bullmq_${process.pid}_${tag}`;
      const queue = new Queue<Payload>(QUEUE, { connection: connection(redisAt), prefix });
      await queue.waitUntilReady();
      /** Finished jobs written by fillFinished: ids finished-0 … finished-(filled-1). */
      let filled = 0;
      /** A plain client for writing finished jobs in pipelines; made by the first fill. */
      let redis: Redis | null = null;
      /** The finish time of every filled job: real completions score later. */
      const filledAt = Date.now() - 3_600_000;
      /** A key of this queue, as BullMQ names it: a job's hash by its id, or a set by its name. */
      const key = (name: string) => `${prefix}:${QUEUE}:${name}`;
      return {
        target: `${redisAt}:${prefix}`,
        async enqueueOne(payload) {
          await queue.add("noop", payload);
        },
        async enqueueMany(payloads) {
          await queue.addBulk(payloads.map((data) => ({ name: "noop", data })));
        },
        async fillFinished(count) {
          // Jobs as BullMQ leaves a completed one it keeps (removeOnComplete
          // unset): its hash with the run's fields, and its id in the completed
          // set scored by its finish time.
          redis ??= new Redis({ host: REDIS_HOST, port: redisAt });
          for (const [start, end] of chunkRanges(count, FINISHED_CHUNK)) {
            const pipeline = redis.pipeline();
            const scored: Array<number | string> = [];
            for (let n = start; n < end; n++) {
              const id = finishedId(n);
              pipeline.hset(key(id), {
                name: "noop", data: JSON.stringify({ n }), opts: "{}", timestamp: filledAt, delay: 0, priority: 0,
                processedOn: filledAt, ats: 1, atm: 1, returnvalue: "null", finishedOn: filledAt,
              });
              scored.push(filledAt, id);
            }
            pipeline.zadd(key("completed"), ...scored);
            await pipeline.exec();
            filled = end;
          }
        },
        async settle() {},
        async prepareGraph(graph) {
          return treeUnsupported(graph);
        },
        async enqueueGraph(graph) {
          const flows = new FlowProducer({ connection: connection(redisAt), prefix });
          try {
            for (const root of flowTrees(graph)) {
              // FlowProducer walks a tree recursively: a chain thousands deep overflows the stack (10,000 did here).
              await flows.add(root).catch((error: Error) => {
                throw new Error(`FlowProducer.add of a ${graph.shape} of ${graph.dependsOn.length} jobs: ${error.message}`);
              });
            }
          } finally {
            await flows.close();
          }
        },
        async unfinished() {
          const counts = await queue.getJobCounts("wait", "active", "delayed", "prioritized", "waiting-children");
          return Object.values(counts).reduce((sum, count) => sum + count, 0);
        },
        async close() {
          // obliterate() deletes a thousand jobs per script call; the filled
          // ones go first, in pipelines, which takes seconds instead of minutes.
          if (redis) {
            for (const [start, end] of chunkRanges(filled, FINISHED_CHUNK)) {
              const keys = [];
              for (let n = start; n < end; n++) keys.push(key(finishedId(n)));
              await redis.unlink(...keys);
            }
            await redis.zremrangebyscore(key("completed"), filledAt, filledAt);
            await redis.quit();
            redis = null;
          }
          await queue.obliterate({ force: true });
          await queue.close();
        },
      };
    },
  };
  return { system, startWorker };
}

/** Null when every job of `graph` has at most one dependent (a BullMQ flow is a tree); else why not. */
function treeUnsupported(graph: WorkflowGraph): string | null {
  const dependents = new Array<number>(graph.dependsOn.length).fill(0);
  for (const list of graph.dependsOn) for (const d of list) dependents[d]! += 1;
  const shared = dependents.filter((n) => n > 1).length;
  return shared === 0 ? null : `not expressible as BullMQ flows: ${shared} jobs have several dependents, and a BullMQ job has one parent`;
}

/** The graph as BullMQ flow trees: each job's children are what it depends on; the roots are the jobs nothing depends on. */
function flowTrees(graph: WorkflowGraph): FlowJob[] {
  const nodes: FlowJob[] = graph.dependsOn.map((_, n) => ({ name: "noop", queueName: QUEUE, data: { n } }));
  const hasDependent = new Array<boolean>(nodes.length).fill(false);
  graph.dependsOn.forEach((list, n) => {
    if (list.length > 0) nodes[n]!.children = list.map((d) => nodes[d]!);
    for (const d of list) hasDependent[d] = true;
  });
  return nodes.filter((_, n) => !hasDependent[n]);
}

/** The worker side, for every Redis: the target is `<port>:<prefix>` (see `open`). */
const startWorker: StartWorker = async (target, _variant, onJob) => {
  const match = /^(\d+):(.+)$/.exec(target);
  if (!match) throw new Error(`bullmq: target "${target}" is not <port>:<prefix>`);
  const worker = new Worker<Payload>(
    QUEUE,
    async (job) => {
      onJob(job.data);
    },
    { connection: connection(Number(match[1])), prefix: match[2]!, concurrency: CONCURRENCY },
  );
  worker.on("error", (error) => console.error(`bullmq: ${error.message}`));
  await worker.waitUntilReady();
  return {
    async stop() {
      await worker.close();
    },
  };
};

/** BullMQ on the machine's Redis, with whatever persistence it has (the report's meta records it). */
export const { system } = bullmqSystem({
  name: "bullmq",
  redisPort: async () => REDIS_PORT,
  store: "the machine's Redis on 127.0.0.1:6379, each run under its own key prefix, obliterated after",
});
export { startWorker };
