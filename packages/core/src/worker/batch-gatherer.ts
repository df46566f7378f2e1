import type { AnyJobDefinition } from "../core/define-job.js";
import type { Attempt } from "./attempt.js";
import { type BatchDeps, executeBatch } from "./batch-run.js";
import type { AttemptContext } from "./attempt-context.js";
import { executeAttempt } from "./executor.js";

interface Gathering {
  definition: AnyJobDefinition;
  attempts: Attempt[];
  timer: NodeJS.Timeout;
  /** Settled when the batch's run ends: every job's end written or given up. */
  done: Promise<void>;
  start(): void;
}

/**
 * Runs each claimed attempt: a kind with a handler per job at once
 * (executeAttempt), a batch kind's jobs gathered per kind (and per
 * `batch.key`) into batches (executeBatch). A batch leaves when it holds
 * `batch.maxSize` jobs, when `batch.maxWaitMs` has passed since its first,
 * when the worker has no free slot left (`full()`: the jobs gathered hold
 * their slots, so waiting longer could not fill it), or when the worker
 * stops taking work (`flushAll`). Gathered jobs are held attempts like any
 * other: their leases are renewed and a cancel reaches them.
 */
export class BatchGatherer {
  private readonly gatherings = new Map<string, Gathering>();

  constructor(
    private readonly deps: BatchDeps,
    /** True when every slot of the worker is held. */
    private readonly full: () => boolean,
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
        attempts,
        timer: setTimeout(() => this.flush(key), batch.maxWaitMs),
        done: started.then(() => executeBatch(definition, attempts, this.deps)),
        start,
      };
      this.gatherings.set(key, gathering);
    }
    gathering.attempts.push(running);
    void gathering.done.finally(() => ended(running));
    if (gathering.attempts.length >= batch.maxSize) this.flush(key);
    else if (this.full()) this.flushAll();
  }

  /** Start every batch being gathered now (the worker is full, or stops taking work). */
  flushAll(): void {
    for (const key of [...this.gatherings.keys()]) this.flush(key);
  }

  private flush(key: string): void {
    const gathering = this.gatherings.get(key);
    if (!gathering) return;
    this.gatherings.delete(key);
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
