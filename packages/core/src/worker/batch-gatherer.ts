import type { AnyJobDefinition } from "../core/define-job.js";
import type { Attempt } from "./attempt.js";
import { type BatchDeps, executeBatch } from "./batch-run.js";
import type { AttemptContext } from "./attempt-context.js";
import { executeAttempt } from "./executor.js";

interface Gathering {
  definition: AnyJobDefinition;
  maxSize: number;
  attempts: Attempt[];
  timer: NodeJS.Timeout;
  /** Settled when the batch's run ends: every job's end written or given up. */
  done: Promise<void>;
  start(): void;
}

/** The worker's slots, as the gatherer reads them. */
export interface WorkerSlots {
  /** Slots the worker has (its concurrency). */
  readonly concurrency: number;
  /** Slots held now: one per attempt from its claim to its end, gathered ones included. */
  held(): number;
}

/**
 * Runs each claimed attempt: a kind with a handler per job at once
 * (executeAttempt), a batch kind's jobs gathered per kind (and per
 * `batch.key`) into batches (executeBatch). A batch leaves when it holds
 * `batch.maxSize` jobs, when `batch.maxWaitMs` has passed since its first,
 * when the worker stops taking work (`flushAll`), or early, when waiting
 * could not fill it.
 *
 * Early means: gathered jobs hold their slots, so on a full worker a
 * gathering grows only from slots that free, and before a `maxWaitMs` ends
 * only running work (handlers, batches already started) frees any. When an
 * arrival leaves the worker full, the gathering that lacks the fewest jobs
 * (the oldest of equals) starts if it lacks more than the slots running
 * work holds, and again until the closest lacks no more or none is left.
 * So a worker whose every slot is gathered starts one rather than wait on
 * itself, and otherwise every gathering waits: under a backlog the slots
 * that free are claimed again into the gatherings, which fill to `maxSize`
 * however many keys there are, as far as the slots can hold them. A claim
 * takes jobs whatever their key, so each key's gathering holds its share
 * of the slots: with `concurrency` at least (keys + 1) × `maxSize`, none
 * ever leaves early (on a full worker, running work then holds at least
 * `maxSize` slots). The price is work: gathered jobs hold slots and run
 * nothing until their batch starts.
 *
 * Gathered jobs are held attempts like any other: their leases are renewed
 * and a cancel reaches them.
 */
export class BatchGatherer {
  private readonly gatherings = new Map<string, Gathering>();
  /** Jobs in gatherings not started yet; the worker's other held slots are running work's. */
  private gathered = 0;

  constructor(
    private readonly deps: BatchDeps,
    private readonly slots: WorkerSlots,
  ) {}

  /**
   * Run `running` (just claimed and registered as held); calls `ended` with
   * it once its end is written or given up (for a batch's job, once the
   * whole batch's are), whatever happened.
   */
  run(definition: AnyJobDefinition, running: Attempt, ended: (running: Attempt) => void): void {
    const batch = definition.batch;
    if (!batch) {
      void executeAttempt(definition, running, this.deps, definition.handler as (context: AttemptContext) => unknown, ended);
      this.startWhatCannotFill();
      return;
    }
    const key = `${definition.kind}\u0000${batchKey(batch.key, running)}`;
    let gathering = this.gatherings.get(key);
    if (!gathering) {
      let start!: () => void;
      const started = new Promise<void>((resolve) => (start = resolve));
      const attempts: Attempt[] = [];
      gathering = {
        definition,
        maxSize: batch.maxSize,
        attempts,
        timer: setTimeout(() => this.flush(key), batch.maxWaitMs),
        done: started.then(() => executeBatch(definition, attempts, this.deps)),
        start,
      };
      this.gatherings.set(key, gathering);
    }
    gathering.attempts.push(running);
    this.gathered += 1;
    void gathering.done.finally(() => ended(running));
    if (gathering.attempts.length >= gathering.maxSize) this.flush(key);
    this.startWhatCannotFill();
  }

  /** Start every batch being gathered now (the worker stops taking work). */
  flushAll(): void {
    for (const key of [...this.gatherings.keys()]) this.flush(key);
  }

  /** The early start (see the class): while the worker is full, start the closest gathering if the slots running work holds could not fill it. */
  private startWhatCannotFill(): void {
    while (this.gatherings.size > 0 && this.slots.held() >= this.slots.concurrency) {
      const freeing = this.slots.held() - this.gathered;
      let closest = "";
      let lacks = Number.POSITIVE_INFINITY;
      // In insertion order, that is by first job: the strict `<` keeps the oldest of equals.
      for (const [key, gathering] of this.gatherings) {
        const lacking = gathering.maxSize - gathering.attempts.length;
        if (lacking < lacks) [closest, lacks] = [key, lacking];
      }
      if (lacks <= freeing) return;
      this.flush(closest);
    }
  }

  private flush(key: string): void {
    const gathering = this.gatherings.get(key);
    if (!gathering) return;
    this.gatherings.delete(key);
    this.gathered -= gathering.attempts.length;
    clearTimeout(gathering.timer);
    gathering.start();
  }
}

/** A job's batch key; a key function that throws puts the job in a batch of its own rather than failing the worker. */
function batchKey(key: ((payload: unknown) => string) | null, running: Attempt): string {
  if (!key) return "";
  try {
    return `k${String(key(running.job.payload))}`;
  } catch {
    return `j${running.job.id}`;
  }
}
