/**
 * What every benchmarked system provides. The bench process uses the client
 * side (`open`: a fresh store, enqueue, count what is left); a worker child
 * process uses `startWorker` from the same module, so it loads only that
 * system's library and its RSS is that system's alone.
 */

export const SYSTEM_NAMES = ["conveyor", "graphile-worker", "pg-boss", "bullmq", "bullmq-aof", "bullmq-pg", "dbos"] as const;
export type SystemName = (typeof SYSTEM_NAMES)[number];

/**
 * The payload of every benchmark job: a sequence number, and for the
 * latency run the enqueue time. A durable job (enqueueDurable) runs `steps`
 * no-op steps, with a sleep of `sleepMs` between two steps when above 0.
 */
export interface Payload {
  n: number;
  t?: number;
  steps?: number;
  sleepMs?: number;
}

/**
 * Worker variants: `perJob`, a handler per job (every system); `array`, a
 * handler that takes a batch (pg-boss); `latency`, an idle worker woken per
 * job (the same as `perJob` except where a system's best latency setting
 * differs from its best throughput setting: pg-boss); `workflow`, `perJob`
 * with whatever the system needs to release dependents (pg-boss: its flow
 * resolver at its shortest interval); `durable`, a worker of durable jobs
 * whose `onJob` is called once per step function run (a replayed step is
 * not run, so not counted); `durableResume`, the same with whatever the
 * system needs to resume a killed worker's jobs soon (Conveyor: a short
 * lease, swept often); `batch`, the system's batch handler, called once per
 * batch with one outcome per job returned (systems with `batchHandlers`);
 * `pressure`, `perJob` with PRESSURE_CONCURRENCY slots whatever the system's
 * own count, each job taking PRESSURE_JOB_MS (the handler awaits `onJob`).
 */
export type WorkerVariant = "perJob" | "notKept" | "array" | "latency" | "workflow" | "durable" | "durableResume" | "batch" | "pressure";

/** The pressure workload's jobs at once in its one worker (workloads/pressure.ts), the same for every system. */
export const PRESSURE_CONCURRENCY = 64;
/** How long each of the pressure workload's jobs takes (a sleep in the handler). */
export const PRESSURE_JOB_MS = 1;

/** Where and what `open` makes: the server (a URL of an admin database; default the bench server) and whether durable jobs will be enqueued. */
export interface OpenOptions {
  server?: string;
  durable?: boolean;
}

/**
 * A graph of jobs for the workflows workload: node i's payload is `{ n: i }`
 * and it waits for the nodes `dependsOn[i]` lists (each of a lower index).
 */
export interface WorkflowGraph {
  /** "fan-in", "chain" or "layered". */
  shape: string;
  dependsOn: number[][];
  /** Dependency edges: the sum of the dependsOn lengths. */
  edges: number;
}

export interface BenchSystem {
  readonly name: SystemName;
  /** Settings used, as printed in the report (name → value and why). */
  readonly settings: Readonly<Record<string, string>>;
  /** True when its stores offer `fillFinished` (the finished-jobs-kept workload runs only for these). */
  readonly fillsFinished?: boolean;
  /** True for a system measured in the durable-execution workloads only (DBOS: a workflow engine, not a job queue to compare job for job). */
  readonly durableOnly?: boolean;
  /** True for a system with a `batch` worker variant (the batch workload, workloads/batch.ts). */
  readonly batchHandlers?: boolean;
  /** True for a system on Redis, which the workloads about PostgreSQL's tables (pressure) leave out. */
  readonly redis?: boolean;
  /**
   * Why this system cannot run here, or null when it can. The bench calls
   * it once per selected system before anything else; a system whose server
   * the bench runs itself (bullmq-aof) starts that server here.
   */
  unavailable(): Promise<string | null>;
  /** A fresh store (a new database, or a new key prefix in Redis), migrated, with a client to enqueue into it. */
  open(tag: string, options?: OpenOptions): Promise<SystemInstance>;
}

export interface SystemInstance {
  /** What a worker child needs to reach this store, its only way to: a database URL, or `<Redis port>:<key prefix>`. */
  readonly target: string;
  /** The PostgreSQL database holding the store, for server statistics per database; absent for Redis. */
  readonly database?: string;
  /** The PostgreSQL schema holding every table of the store (their dead tuples and sizes); absent for Redis. */
  readonly schema?: string;
  /** The store's job tables, schema-qualified, as a reader would scan them (`SELECT count(*) FROM …`); absent for Redis. */
  readonly jobTables?: readonly string[];
  enqueueOne(payload: Payload): Promise<void>;
  /** Enqueue in one call (the system's batch API). */
  enqueueMany(payloads: readonly Payload[]): Promise<void>;
  /**
   * Store `count` jobs that already succeeded, as the system keeps them
   * (with their execution history where it keeps one), written straight
   * into the store: SQL for the PostgreSQL systems, Redis commands for
   * BullMQ. Absent for systems that keep no finished jobs.
   */
  fillFinished?(count: number): Promise<void>;
  /**
   * Enqueue the payloads as the `batch` worker takes them, where that is
   * not one job each (graphile-worker: batch jobs whose payload is an array
   * of them); absent where `enqueueMany` does.
   */
  enqueueBatchJobs?(payloads: readonly Payload[]): Promise<void>;
  /** After a fill: vacuum, analyze and checkpoint, as autovacuum and the checkpointer would soon (no-op for Redis). */
  settle(): Promise<void>;
  /**
   * Jobs not finished yet: waiting (on their dependencies too), running, or
   * sleeping. In the systems of the workloads that read server statistics
   * (durable, batch) the statement's text has `bench_poll` in it, so that
   * those statistics can leave the bench's own polling out.
   */
  unfinished(): Promise<number>;
  /** The payloads (batch items) not finished yet, where a job can hold several (graphile-worker's batch jobs); absent where `unfinished` counts them. */
  unfinishedItems?(): Promise<number>;
  /** Jobs (workflows) that succeeded, to check a durable run's jobs ended well; same marker as `unfinished`. */
  succeeded?(): Promise<number>;
  /** Enqueue durable jobs (workflows), one per payload (`steps`, `sleepMs`); absent for systems without durable execution. */
  enqueueDurable?(payloads: readonly Payload[]): Promise<void>;
  /** Store `count` sleeping durable jobs, due days from now, written straight into the store; absent where there is no such state. */
  fillSleeping?(count: number): Promise<void>;
  /**
   * Enqueue `graph` with the system's own dependency feature, in one call
   * where it allows; absent for systems without one.
   */
  enqueueGraph?(graph: WorkflowGraph): Promise<void>;
  /**
   * Before the worker starts: why this system cannot express `graph`, or
   * null when it can (and whatever measuring it needs is set up).
   */
  prepareGraph?(graph: WorkflowGraph): Promise<string | null>;
  /**
   * Server time (ms) spent releasing dependents since the store was opened
   * (lock waits included), read after the worker stopped (its sessions
   * flush their statistics on exit); null where it cannot be measured.
   */
  dependencyServerMs?(): Promise<number | null>;
  /** Close clients and drop the store. */
  close(): Promise<void>;
}

/** A running worker in a child process. */
export interface RunningWorker {
  stop(): Promise<void>;
}

/**
 * The child-process side of a system: start a worker whose handler calls
 * `onJob` with each payload and awaits what it returns (a promise only in
 * the `pressure` variant, where a job takes PRESSURE_JOB_MS).
 */
export type StartWorker = (target: string, variant: WorkerVariant, onJob: (payload: Payload) => void | Promise<void>) => Promise<RunningWorker>;

export interface SystemModule {
  system: BenchSystem;
  startWorker: StartWorker;
}
