/**
 * The pressure workload: a steady offered load of short jobs through one
 * worker process, while the database is put under the pressures that hold
 * VACUUM back or load it, phase after phase:
 *
 * - clean: the offered rate alone;
 * - held xmin: another connection holds an xid (`BEGIN; SELECT
 *   txid_current()`) for the whole phase, so no row version that dies
 *   meanwhile can be removed;
 * - readers: `readers` connections, each in one REPEATABLE READ
 *   transaction for the whole phase (its snapshot held), scanning the
 *   system's job tables (`count(*)`) again and again;
 * - overload: `overload` times the offered rate, nothing held;
 * - drain: nothing offered, until no job is left unfinished (at most
 *   `drainMs`).
 *
 * The load is open: the producer enqueues what is due at the rate since
 * the phase began, in one call (`enqueueMany`) of whatever is due, so a
 * slow enqueue is made up in the next call rather than lowering the rate.
 * Pickup latency is from the moment a job's enqueue call returned (its
 * commit) to the start of its handler in the worker process (clocks
 * calibrated over IPC, as in the latency workload), per phase for the jobs
 * enqueued in it. Completion, backlog, dead tuples and sizes are read from
 * the database at each phase's end, before its holder or readers let go.
 */
import pg from "pg";
import { now, sleep } from "../lib/clock.js";
import { databaseUrl } from "../lib/postgres.js";
import { percentile } from "../lib/stats.js";
import { WorkerProcess } from "../lib/worker-process.js";
import type { BenchSystem, Payload, SystemInstance } from "../systems/system.js";

export interface PressureOptions {
  /** Jobs offered per second in the clean, held-xmin and readers phases. */
  rate: number;
  /** The overload phase's rate, as a multiple of `rate`. */
  overload: number;
  /** Each phase's length (but the drain's). */
  phaseMs: number;
  /** The drain's bound: how long to wait for the backlog to reach 0. */
  drainMs: number;
  /** Reader connections in the readers phase. */
  readers: number;
  /** Each reader's pause between two scans. */
  readerPauseMs: number;
}

export const PHASE_NAMES = ["clean", "held xmin", "readers", "overload", "drain"] as const;
export type PhaseName = (typeof PHASE_NAMES)[number];

export interface PressurePhase {
  name: PhaseName;
  seconds: number;
  /** Jobs enqueued (committed) during the phase, per second. */
  offeredPerS: number;
  /** Jobs finished during the phase, per second. */
  donePerS: number;
  /** Pickup latency of the jobs enqueued in the phase (ms); Infinity where more than 1% (50%) of them never started; null when none was enqueued. */
  p50Ms: number | null;
  p99Ms: number | null;
  /** Jobs enqueued in the phase whose handler never started before the worker stopped. */
  notStarted: number;
  /** Jobs offered but not finished at the phase's end. */
  backlog: number;
  /** n_dead_tup summed over the system's tables at the phase's end. */
  deadTuples: number;
  /** pg_total_relation_size (table, indexes, TOAST) summed over the system's tables at the phase's end, MB. */
  sizeMb: number;
  /** Scans the readers completed (readers phase only). */
  readerScans?: number;
}

export interface PressureResult {
  phases: PressurePhase[];
  /** Seconds from the end of the offer to no job unfinished; null when the drain ran out first. */
  drainSeconds: number | null;
}

/** The most jobs in one enqueue call when the producer has fallen behind. */
const MAX_BATCH = 1_000;
/** The producer's pause when nothing is due. */
const TICK_MS = 5;
const POLL_MS = 100;
/** The pickup of a job that never started: sorts after every measured one (Infinity would not: Infinity - Infinity is NaN). */
const NEVER = Number.MAX_VALUE;

/**
 * An open-loop producer: from `start`, enqueues what is due at the current
 * rate, records when each job's enqueue returned (by its number `n`), and
 * stops at `stop`. A change of rate takes effect from the moment it is made.
 */
class Producer {
  /** Jobs whose enqueue returned, numbered 0 … offered-1. */
  offered = 0;
  /** When (bench clock) the enqueue of job n returned. */
  readonly committedAt: number[] = [];
  private rate = 0;
  private anchor = { t: 0, due: 0 };
  private running = true;
  private readonly done: Promise<void>;

  constructor(private readonly instance: SystemInstance, rate: number) {
    this.setRate(rate);
    this.done = this.loop();
    this.done.catch(() => {}); // seen by `failed` and `stop`
  }

  /** Jobs due so far: those due at the old rates, plus the current rate's since its change. */
  private due(): number {
    return this.anchor.due + Math.floor(((now() - this.anchor.t) * this.rate) / 1000);
  }

  setRate(rate: number): void {
    this.anchor = { t: now(), due: this.rate === 0 ? this.offered : this.due() };
    this.rate = rate;
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const count = Math.min(MAX_BATCH, this.due() - this.offered);
      if (count <= 0) {
        await sleep(TICK_MS);
        continue;
      }
      const first = this.offered;
      const payloads: Payload[] = Array.from({ length: count }, (_, i) => ({ n: first + i }));
      await this.instance.enqueueMany(payloads);
      const t = now();
      for (let n = first; n < first + count; n++) this.committedAt[n] = t;
      this.offered += count;
    }
  }

  /** Stop offering; resolves when the last enqueue has returned (rejects if an enqueue failed). */
  stop(): Promise<void> {
    this.running = false;
    return this.done;
  }

  /** Rejects as soon as an enqueue fails, so a phase does not wait out a dead producer. */
  get failed(): Promise<never> {
    return this.done.then(() => new Promise<never>(() => {}));
  }
}

const unmeasured = (ms: number) => (ms === NEVER ? Infinity : ms);

/** What the database shows at a phase boundary. */
interface Boundary {
  t: number;
  offered: number;
  finished: number;
  backlog: number;
  deadTuples: number;
  sizeMb: number;
}

/**
 * Run the phases for one system on a fresh store on `server` (an admin URL
 * of the private PostgreSQL). The worker child, the holder and reader
 * connections, the producer and the store are all ended whatever happens.
 */
export async function pressureRun(system: BenchSystem, options: PressureOptions, tag: string, server: string, log: (message: string) => void): Promise<PressureResult> {
  const instance = await system.open(tag, { server });
  /** Connections of our own (statistics, holder, readers), ended in `finally`. */
  const clients = new Set<pg.Client>();
  const connect = async () => {
    const client = new pg.Client({ connectionString: databaseUrl(instance.database!, server), application_name: "conveyor-bench-pressure" });
    client.on("error", () => {}); // a drop of the database at the end ends it
    clients.add(client);
    await client.connect();
    return client;
  };
  let worker: WorkerProcess | null = null;
  let producer: Producer | null = null;
  try {
    if (!instance.database || !instance.schema || !instance.jobTables?.length) throw new Error(`${system.name} keeps no tables in PostgreSQL`);
    const schema = instance.schema;
    const tables = instance.jobTables;
    const stats = await connect();
    const boundary = async (): Promise<Boundary> => {
      const t = now();
      const offered = producer?.offered ?? 0;
      const unfinished = await instance.unfinished();
      // Statistics as the server has them now (a backend reports its counts at most once a second).
      const { rows } = await stats.query<{ dead: string; bytes: string }>(
        `SELECT coalesce(sum(n_dead_tup), 0)::bigint AS dead, coalesce(sum(pg_total_relation_size(relid)), 0)::bigint AS bytes
           FROM pg_stat_user_tables WHERE schemaname = $1`,
        [schema],
      );
      return { t, offered, finished: offered - unfinished, backlog: unfinished, deadTuples: Number(rows[0]!.dead), sizeMb: Number(rows[0]!.bytes) / 1048576 };
    };

    worker = await WorkerProcess.spawn(system.name, "pressure", instance.target);
    await worker.start({ recordStarts: true });
    await sleep(1_000); // let it go idle: first fetch done, listening

    const bounds: Boundary[] = [];
    const readerScans: Partial<Record<PhaseName, number>> = {};
    producer = new Producer(instance, options.rate);
    let last = await boundary();
    bounds.push(last);
    /**
     * A phase of `phaseMs` at the producer's current rate, with `during` set
     * up before it and released after its boundary is read; the last one
     * ends the offer before its boundary, so every job offered is one of a
     * phase's.
     */
    const phase = async (name: PhaseName, during?: () => Promise<() => Promise<void>>) => {
      log(`  ${system.name} pressure: ${name}`);
      const release = during ? await during() : async () => {};
      try {
        await Promise.race([sleep(Math.max(0, last.t + options.phaseMs - now())), producer!.failed]);
        if (name === "overload") await producer!.stop();
        last = await boundary();
        bounds.push(last);
      } finally {
        await release();
      }
    };

    await phase("clean");
    await phase("held xmin", async () => {
      const holder = await connect();
      await holder.query("BEGIN");
      await holder.query("SELECT txid_current()");
      return async () => {
        await holder.query("ROLLBACK").catch(() => {});
        await holder.end().catch(() => {});
        clients.delete(holder);
      };
    });
    await phase("readers", async () => {
      const readers = await Promise.all(Array.from({ length: options.readers }, connect));
      let reading = true;
      let scans = 0;
      const loops = readers.map(async (reader) => {
        await reader.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
        while (reading) {
          for (const table of tables) await reader.query(`SELECT count(*) FROM ${table}`);
          scans++;
          if (options.readerPauseMs > 0) await sleep(options.readerPauseMs);
        }
      });
      return async () => {
        reading = false;
        const failures = (await Promise.allSettled(loops)).filter((r) => r.status === "rejected");
        readerScans.readers = scans;
        for (const reader of readers) {
          await reader.query("ROLLBACK").catch(() => {});
          await reader.end().catch(() => {});
          clients.delete(reader);
        }
        if (failures.length > 0) throw new Error(`a reader failed: ${String((failures[0] as PromiseRejectedResult).reason)}`);
      };
    });
    producer.setRate(options.rate * options.overload);
    await phase("overload");

    log(`  ${system.name} pressure: drain`);
    const drainFrom = last.t;
    let drained: number | null = null;
    while (now() - drainFrom < options.drainMs) {
      if ((await instance.unfinished()) === 0) {
        drained = (now() - drainFrom) / 1000;
        break;
      }
      await sleep(POLL_MS);
    }
    bounds.push(await boundary());

    const { starts } = await worker.stop();
    worker = null;
    const firstStart = new Float64Array(producer.offered).fill(NaN);
    for (const [n, t] of starts) if (n >= 0 && n < firstStart.length && !(firstStart[n]! <= t)) firstStart[n] = t;

    const phases = PHASE_NAMES.map((name, i): PressurePhase => {
      const from = bounds[i]!;
      const to = bounds[i + 1]!;
      const seconds = (to.t - from.t) / 1000;
      const pickups: number[] = [];
      let notStarted = 0;
      for (let n = from.offered; n < to.offered; n++) {
        const started = firstStart[n]!;
        if (Number.isNaN(started)) notStarted++;
        pickups.push(Number.isNaN(started) ? NEVER : started - producer!.committedAt[n]!);
      }
      return {
        name,
        seconds,
        offeredPerS: (to.offered - from.offered) / seconds,
        donePerS: (to.finished - from.finished) / seconds,
        p50Ms: pickups.length > 0 ? unmeasured(percentile(pickups, 50)) : null,
        p99Ms: pickups.length > 0 ? unmeasured(percentile(pickups, 99)) : null,
        notStarted,
        backlog: to.backlog,
        deadTuples: to.deadTuples,
        sizeMb: to.sizeMb,
        ...(readerScans[name] !== undefined ? { readerScans: readerScans[name] } : {}),
      };
    });
    return { phases, drainSeconds: drained };
  } finally {
    await producer?.stop().catch(() => {});
    worker?.kill();
    await Promise.all([...clients].map((client) => client.end().catch(() => {})));
    await instance.close();
  }
}
