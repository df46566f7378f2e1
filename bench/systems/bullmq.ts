import { type BackendClasses, type ConnectionOptions, createRedisBackend, type FlowJob, type IQueueBackend, type QueueOptions, type RedisQueueBackend, withBackend } from "bullmq";
import { Redis } from "ioredis";
import { chunkRanges } from "../lib/chunks.js";
import { REDIS_HOST, REDIS_PORT, redisUnavailable } from "../lib/redis.js";
import { type BenchSystem, type OpenOptions, type Payload, PRESSURE_CONCURRENCY, type StartWorker, type SystemModule, type SystemName, type WorkflowGraph } from "./system.js";

const QUEUE = "bench";
/** BullMQ runs this many jobs at once in one worker (docs.bullmq.io/guide/workers/concurrency). */
const CONCURRENCY = 100;

/** A connection to the Redis on 127.0.0.1:`port`, as BullMQ's workers need it (commands wait through reconnects). */
const connection = (port: number): ConnectionOptions => ({ host: REDIS_HOST, port, maxRetriesPerRequest: null });

/** Finished jobs written per pipeline by `fillFinished`. */
const FINISHED_CHUNK = 10_000;
/** Ids of filled finished jobs: outside BullMQ's numeric counter, so no job enqueued later takes one. */
const finishedId = (n: number) => `finished-${n}`;

/**
 * Where one BullMQ system keeps its queue: the backend's classes, and how a
 * fresh namespace in it is made and how a worker child finds it again.
 */
export interface BullmqStore<B extends IQueueBackend, C> {
  name: Extract<SystemName, "bullmq" | "bullmq-aof" | "bullmq-pg">;
  /** Queue, Worker and FlowProducer bound to the backend. */
  classes: BackendClasses<B, C>;
  /** The `store` line of the settings: which server, and what it keeps on disk. */
  store: string;
  /** See BenchSystem.fillsFinished: whether its namespaces offer `fillFinished`. */
  fillsFinished: boolean;
  /** See BenchSystem.redis. */
  redis: boolean;
  /** As BenchSystem.unavailable (a server the bench runs itself is started here). */
  unavailable(): Promise<string | null>;
  /** A fresh namespace (a key prefix, a database), with what the client needs to reach it. */
  open(tag: string, options: OpenOptions): Promise<BullmqNamespace<C>>;
  /** A worker child's options (connection, and prefix where there is one), from a namespace's target alone. */
  reach(target: string): QueueOptions<C>;
}

export interface BullmqNamespace<C> {
  /** See SystemInstance.target: `reach` turns it back into options. */
  target: string;
  database?: string;
  /** See SystemInstance.schema and jobTables: where the store is a PostgreSQL database. */
  schema?: string;
  jobTables?: readonly string[];
  /** The client's options (the same store as `reach(target)`, set up for it: migrated). */
  options: QueueOptions<C>;
  /** See SystemInstance.fillFinished; absent where the bench cannot write finished jobs straight into the store. */
  fillFinished?(count: number): Promise<void>;
  /** See SystemInstance.settle; absent where there is nothing to settle (Redis). */
  settle?(): Promise<void>;
  /** After the client's queue is closed: drop what the namespace holds. */
  drop(): Promise<void>;
}

/**
 * BullMQ on one store: the same settings, workloads and worker whatever the
 * store. A worker child finds the store from its target alone (see
 * `reach`), so it needs nothing else from this process.
 */
export function bullmqSystem<B extends IQueueBackend, C>(store: BullmqStore<B, C>): SystemModule {
  const { Queue, FlowProducer, Worker } = store.classes;
  const system: BenchSystem = {
    name: store.name,
    fillsFinished: store.fillsFinished,
    redis: store.redis,
    settings: {
      worker: `one Worker, concurrency ${CONCURRENCY} (the pressure workload: ${PRESSURE_CONCURRENCY}); lock renewal and stalled-job checks at their defaults; completed jobs kept (default)`,
      enqueue: "Queue.add() one at a time; addBulk() for batches",
      workflows: "FlowProducer.add() of the graph as a tree (a parent waits for its children; a job has at most one parent, so graphs where a job has two dependents are not expressible)",
      store: store.store,
    },
    unavailable: () => store.unavailable(),
    async open(tag, options = {}) {
      const namespace = await store.open(tag, options);
      const queue = new Queue<Payload>(QUEUE, namespace.options);
      // The drop that follows close() ends what is left of its connections (the PostgreSQL backend's pool clients): no error by then.
      let closing = false;
      queue.on("error", (error) => {
        if (!closing) console.error(`${store.name}: ${error.message}`);
      });
      try {
        await queue.waitUntilReady();
      } catch (error) {
        await queue.close().catch(() => undefined);
        await namespace.drop();
        throw error;
      }
      return {
        target: namespace.target,
        ...(namespace.database ? { database: namespace.database } : {}),
        ...(namespace.schema ? { schema: namespace.schema, jobTables: namespace.jobTables ?? [] } : {}),
        async enqueueOne(payload) {
          await queue.add("noop", payload);
        },
        async enqueueMany(payloads) {
          await queue.addBulk(payloads.map((data) => ({ name: "noop", data })));
        },
        ...(namespace.fillFinished ? { fillFinished: namespace.fillFinished } : {}),
        settle: namespace.settle ?? (async () => {}),
        async prepareGraph(graph) {
          return treeUnsupported(graph);
        },
        async enqueueGraph(graph) {
          const flows = new FlowProducer(namespace.options);
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
          closing = true;
          try {
            await queue.close();
          } finally {
            await namespace.drop();
          }
        },
      };
    },
  };

  const startWorker: StartWorker = async (target, variant, onJob) => {
    const worker = new Worker<Payload>(
      QUEUE,
      async (job) => {
        await onJob(job.data);
      },
      { ...store.reach(target), concurrency: variant === "pressure" ? PRESSURE_CONCURRENCY : CONCURRENCY },
    );
    worker.on("error", (error) => console.error(`${store.name}: ${error.message}`));
    await worker.waitUntilReady();
    return {
      async stop() {
        await worker.close();
      },
    };
  };
  return { system, startWorker };
}

/**
 * BullMQ on a Redis on 127.0.0.1: each run under a key prefix of its own,
 * obliterated after; the target is `<port>:<prefix>`.
 */
export function redisStore({
  name,
  redisPort,
  store,
}: {
  name: Extract<SystemName, "bullmq" | "bullmq-aof">;
  /**
   * The port of its Redis on 127.0.0.1, or why there is none. Called first
   * by `unavailable()`, so a Redis the bench runs itself is started only for
   * a selected system, then by every `open()`: it must return the same port.
   */
  redisPort(): Promise<number | string>;
  store: string;
}): BullmqStore<RedisQueueBackend, ConnectionOptions> {
  const classes = withBackend(createRedisBackend);
  return {
    name,
    classes,
    store,
    fillsFinished: true,
    redis: true,
    async unavailable() {
      const port = await redisPort();
      return typeof port === "string" ? port : redisUnavailable(port);
    },
    async open(tag) {
      const redisAt = await redisPort();
      if (typeof redisAt === "string") throw new Error(redisAt);
      const prefix = `bench_bullmq_${process.pid}_${tag}`;
      const options = { connection: connection(redisAt), prefix };
      /** Finished jobs written by fillFinished: ids finished-0 … finished-(filled-1). */
      let filled = 0;
      /** A plain client for writing finished jobs in pipelines and for clean-up. */
      const redis = new Redis({ host: REDIS_HOST, port: redisAt, lazyConnect: true });
      /** The finish time of every filled job: real completions score later. */
      const filledAt = Date.now() - 3_600_000;
      /** A key of this queue, as BullMQ names it: a job's hash by its id, or a set by its name. */
      const key = (name: string) => `${prefix}:${QUEUE}:${name}`;
      return {
        target: `${redisAt}:${prefix}`,
        options,
        async fillFinished(count) {
          // Jobs as BullMQ leaves a completed one it keeps (removeOnComplete
          // unset): its hash with the run's fields, and its id in the completed
          // set scored by its finish time.
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
        async drop() {
          // obliterate() deletes a thousand jobs per script call; the filled
          // ones go first, in pipelines, which takes seconds instead of minutes.
          try {
            for (const [start, end] of chunkRanges(filled, FINISHED_CHUNK)) {
              const keys = [];
              for (let n = start; n < end; n++) keys.push(key(finishedId(n)));
              await redis.unlink(...keys);
            }
            if (filled > 0) await redis.zremrangebyscore(key("completed"), filledAt, filledAt);
          } finally {
            redis.disconnect();
          }
          const queue = new classes.Queue<Payload>(QUEUE, options);
          try {
            await queue.obliterate({ force: true });
          } finally {
            await queue.close();
          }
        },
      };
    },
    reach(target) {
      const match = /^(\d+):(.+)$/.exec(target);
      if (!match) throw new Error(`${name}: target "${target}" is not <port>:<prefix>`);
      return { connection: connection(Number(match[1])), prefix: match[2]! };
    },
  };
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

/** BullMQ on the machine's Redis, with whatever persistence it has (the report's meta records it). */
export const { system, startWorker } = bullmqSystem(
  redisStore({
    name: "bullmq",
    redisPort: async () => REDIS_PORT,
    store: "the machine's Redis on 127.0.0.1:6379, each run under its own key prefix, obliterated after",
  }),
);
