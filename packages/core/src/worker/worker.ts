import { hostname } from "node:os";
import type { Logger } from "pino";
import type { AnyJobDefinition } from "../core/define-job.js";
import { keepsSucceeded } from "../core/retention.js";
import { CLAIM_LOCK_TIMEOUT_MS, ERROR_BACKOFF_MAX_MS, SHUTDOWN_CLEANUP_MS, ERROR_BACKOFF_MIN_MS, WORKER_HEARTBEAT_MS, WORKER_STALE_MS } from "../core/defaults.js";
import type { ClaimedJob } from "../core/model.js";
import { type MetricRecorders, NO_METRICS, type WorkerMetrics } from "../metrics/worker-metrics.js";
import type { JobStore } from "../store/job-store.js";
import type { WorkerStore } from "../store/worker-store.js";
import type { ClaimStore } from "../store/claim-store.js";
import { JobCancelledError, WorkerShutdownError } from "./abort-reasons.js";
import { ClaimChooser } from "./claim-chooser.js";
import { AttemptWriter } from "./attempt-writer.js";
import { BatchGatherer } from "./batch-gatherer.js";
import type { BatchDeps } from "./batch-run.js";
import { HandlerTools } from "./handler-tools.js";
import { HistoryUpkeep } from "./history-upkeep.js";
import { LeaseKeeper } from "./lease-keeper.js";
import { NotificationListener } from "./listener.js";
import { type ResolvedWorkerOptions, resolveWorkerOptions, type WorkerOptions } from "./options.js";
import { Periodic } from "./periodic.js";
import { Pruner } from "./pruner.js";
import { Reclaimer } from "./reclaimer.js";
import { createScheduler } from "./scheduler-setup.js";
import type { CronScheduler } from "./scheduler.js";
import { Attempt } from "./attempt.js";
import { settlesWithin } from "../core/deadline.js";
import { GracePeriod, sleep, WakeSignal } from "./wake-signal.js";
import type { WorkerDeps } from "./worker-deps.js";
import { countClaimed, readTraceContexts } from "./claimed-jobs.js";
import { waitToStart } from "./database-start.js";
import { EarlyCancels } from "./early-cancels.js";
import { ensureTenantIndex } from "./tenant-index.js";
import { registerTestSignals, WorkerLoopTestSignals } from "./test-signals.js";

export type { WorkerOptions } from "./options.js";

/**
 * Runs handlers for claimed jobs. Create with `conveyor.worker(options)`,
 * then `start()`; `stop()` shuts down gracefully (stop claiming, wait up to
 * the grace period, then hand unfinished jobs back to the queue).
 */
export class Worker {
  /** The options this worker runs with, defaults filled in and checked (see `WorkerOptions` for each default). */
  readonly options: ResolvedWorkerOptions;
  /** The Prometheus metrics it records into: `options.metrics`, or null when none were given (it then records none). */
  readonly metrics: WorkerMetrics | null;
  /** What its parts record into: its metrics, or nothing. */
  private readonly recorders: MetricRecorders;
  /** Its logger: the client's (or `options.logger`), with `workerId` on every line. */
  readonly log: Logger;
  private readonly store: JobStore;
  private readonly workers: WorkerStore;
  private readonly definitions: ReadonlyMap<string, AnyJobDefinition>;
  /** Jobs held right now, by execution id. */
  private readonly running = new Map<string, Attempt>();
  /** Resolved, and emptied, when the last held attempt ends (allEnded). */
  private endedWaiters: Array<() => void> = [];
  private readonly gatherer: BatchGatherer;
  private readonly workAvailable = new WakeSignal();
  private readonly slotFreed = new WakeSignal();
  private readonly writer: AttemptWriter;
  private readonly leases: LeaseKeeper;
  private readonly reclaimer: Reclaimer;
  private readonly scheduler: CronScheduler | null;
  private readonly tools: HandlerTools;
  private readonly pruner: Pruner | null;
  /** Makes history's day partitions ahead, whether or not this worker prunes. */
  private readonly historyUpkeep: HistoryUpkeep;
  private readonly claims: ClaimChooser;
  private readonly claimStore: ClaimStore;
  private listener: NotificationListener | null = null;
  /** Refreshes this worker's `workers` row and checks its LISTEN connection. */
  private readonly registration: Periodic<void>;
  private loop: Promise<void> | null = null;
  private stopping: Promise<void> | null = null;
  private grace: GracePeriod | null = null;
  private state: "new" | "waiting" | "running" | "stopping" | "stopped" = "new";
  /** Aborted by `stop()` while `start()` waits for the database. */
  private readonly startAbort = new AbortController();
  private readonly untrackActiveJobs: () => void;
  private readonly earlyCancels = new EarlyCancels();
  /** For tests: the claim loop's points (workerTestSignals). */
  private readonly testSignals = new WorkerLoopTestSignals();

  /** Made by `conveyor.worker(options)`, which passes the client's deps. */
  constructor(
    private readonly deps: WorkerDeps,
    options: WorkerOptions = {},
  ) {
    this.definitions = deps.jobs;
    this.options = resolveWorkerOptions(options, [...deps.jobs.keys()]);
    this.metrics = options.metrics ?? null;
    this.recorders = this.metrics ?? NO_METRICS;
    this.untrackActiveJobs = this.recorders.trackActiveJobs(() => this.running.size);
    this.log = (options.logger ?? deps.logger).child({ workerId: this.options.id });
    this.store = deps.store.jobs;
    this.workers = deps.store.workers;
    this.writer = new AttemptWriter(this.store, this.recorders, this.log);
    this.leases = new LeaseKeeper(this.store, this.running, this.options.leaseMs, this.options.heartbeatMs, this.recorders, this.log, (running) =>
      this.testSignals.cancelObserved.signal({ executionId: running.executionId, via: "heartbeat" }),
    );
    const sleepers = { steps: deps.store.steps, intervalMs: this.options.wakeIntervalMs };
    this.reclaimer = new Reclaimer(this.store, this.options.reclaimIntervalMs, this.recorders, this.log, { tracing: deps.tracing, workerId: this.id }, sleepers);
    this.registration = new Periodic(() => this.refreshRegistration(), WORKER_HEARTBEAT_MS, (error) => {
      this.recorders.databaseErrors.inc({ operation: "register" });
      this.log.warn({ err: (error as Error).message }, "could not refresh worker registration");
    });
    this.scheduler = createScheduler(deps, this.options, this.log, this.recorders);
    this.tools = new HandlerTools(deps.store.handlers, this.options.progressIntervalMs, this.recorders);
    // One object for every attempt of this worker, not one per job.
    const executorDeps: BatchDeps = {
      writer: this.writer, metrics: this.recorders, log: this.log, workerId: this.id, tools: this.tools, flows: deps.store.flows,
      renew: (running) => this.leases.renewOne(running),
      durable: { steps: deps.store.steps, handlers: deps.store.handlers, workerId: this.id, metrics: this.recorders, tracing: deps.tracing },
      tracing: deps.tracing,
      handlers: deps.store.handlers,
    };
    this.gatherer = new BatchGatherer(executorDeps, { concurrency: this.options.concurrency, held: () => this.running.size });
    const retention = this.options.retention;
    this.pruner =
      retention &&
      new Pruner(
        (signal) => deps.prune({ finishedMs: retention.finishedMs, deadLetterMs: retention.deadLetterMs, eventsMs: retention.eventsMs, batchSize: retention.batchSize, signal }),
        retention.intervalMs,
        this.recorders,
        this.log,
      );
    this.historyUpkeep = new HistoryUpkeep(deps.store.retention, this.recorders, this.log);
    this.claimStore = deps.store.claimStoreOpen(deps.connection, this.options.queues);
    this.claims = new ClaimChooser(
      this.claimStore,
      deps.store.limitedClaims,
      deps.store.queueSettings,
      this.options.fairness,
      (cap) => {
        this.recorders.claimLockTimeouts.inc({ cap });
        this.log.warn({ cap, waitedMs: CLAIM_LOCK_TIMEOUT_MS }, "a cap's lock was held too long; skipped that cap for this claim round");
      },
    );
    registerTestSignals(this, {
      claims: this.claims.testSignals,
      pruner: this.pruner?.testSignals ?? null,
      historyUpkeep: this.historyUpkeep.testSignals,
      reclaimer: this.reclaimer.testSignals,
      scheduler: this.scheduler?.testSignals ?? null,
      worker: this.testSignals,
    });
  }

  /** This worker's id, as in the `workers` table and every attempt it runs. Default `<hostname>-<pid>-<random>`. */
  get id(): string {
    return this.options.id;
  }

  /** Jobs this worker holds right now. */
  get activeCount(): number {
    return this.running.size;
  }

  /**
   * Wait for the database, then register, make history's days ahead,
   * start listening and sweeping, and begin claiming jobs. While the
   * database cannot be reached (refused, unreachable, starting up) it
   * waits with back-off, from
   * `DATABASE_WAIT_MIN_MS` (500 ms) doubling to `DATABASE_WAIT_MAX_MS` (10 s),
   * and logs each failed try with its error code and the next wait; other
   * errors (a wrong password) are thrown. `stop()` during that wait ends it
   * at once: `start()` then resolves with the worker stopped.
   */
  async start(): Promise<void> {
    if (this.state !== "new") throw new Error(`worker ${this.id} was already started`);
    this.state = "waiting";
    try {
      await this.scheduler?.checkPayloads(); // a bad schedule payload is refused before anything, the wait included
      if (!(await waitToStart(this.deps.store.pool, this.startAbort.signal, this.log, this.testSignals))) return; // stopped while waiting
      if (this.state !== "waiting") return;
      this.state = "running";
      await this.scheduler?.prepare();
    } catch (error) {
      this.state = "new";
      throw error;
    }
    await this.register();
    await this.deps.store.clock.now(); // execution ids follow the database's clock from the first claim on
    if (this.options.fairness === "tenant") await ensureTenantIndex(this.deps.store, this.log);
    await this.historyUpkeep.start(); // before the first claim: today's day exists before this worker ends a job
    if (this.options.listen && this.deps.listenConnection === null) {
      this.log.info("polling only: the client goes through a transaction pooler and has no listenConnectionString");
    } else if (this.options.listen) {
      this.listener = new NotificationListener(
        this.deps.listenConnection!,
        this.deps.store.schema,
        (queue) => this.onNotification(queue),
        this.log,
        (executionId) => this.onCancelNotification(executionId),
      );
      await this.listener.start();
    }
    this.leases.start();
    this.reclaimer.start();
    this.pruner?.start();
    this.registration.start();
    this.loop = this.claimLoop();
    this.scheduler?.start();
    this.log.info(
      {
        concurrency: this.options.concurrency,
        claimBatchSize: this.options.claimBatchSize,
        progressIntervalMs: this.options.progressIntervalMs,
        queues: this.options.queues ?? "all",
        kinds: this.options.kinds,
        listen: this.options.listen,
        retention: this.options.retention ?? false,
      },
      "worker started",
    );
  }

  /**
   * Graceful shutdown: stop claiming, wait up to `graceMs` (default
   * `shutdownGraceMs`) for running handlers, then abort the rest and hand
   * their jobs back to the queue at once (recorded as `interrupted`, not
   * counted as an attempt). Never marks a job failed. Bounded whatever the
   * database does: resolves within the grace period plus
   * `SHUTDOWN_CLEANUP_MS`; a job whose hand-back the database did not take
   * by then comes back when its lease expires.
   *
   * Safe to call more than once. A call while a stop is under way may
   * shorten its grace period (`stop({ graceMs: 0 })` ends it now, as a
   * second SIGTERM does in `conveyor worker`), never lengthen it.
   */
  stop(options: { graceMs?: number } = {}): Promise<void> {
    const graceMs = options.graceMs ?? this.options.shutdownGraceMs;
    if (this.stopping) {
      this.grace?.shorten(graceMs);
      return this.stopping;
    }
    this.stopping = this.shutdown(graceMs);
    return this.stopping;
  }

  private async shutdown(graceMs: number): Promise<void> {
    if (this.state === "new" || this.state === "waiting") {
      this.startAbort.abort();
      this.untrackActiveJobs();
      await this.claimStore.close();
      this.state = "stopped";
      return;
    }
    this.state = "stopping";
    const grace = (this.grace = new GracePeriod(graceMs));
    this.workAvailable.notify();
    this.slotFreed.notify();
    // Stop taking work. A claim or cron pass in flight on a dead network is
    // not waited for past the grace period: what it claims is never started.
    const intake = Promise.allSettled([this.scheduler?.stop(), this.loop, this.listener?.stop()]);
    await Promise.race([intake, grace.over]);
    this.gatherer.flushAll(); // no more jobs will join a batch being gathered
    if (this.running.size > 0) {
      this.log.info({ running: this.running.size, graceMs }, "waiting for running jobs before shutdown");
      await Promise.race([this.allEnded(), grace.over]);
    }
    grace.end();
    if (this.running.size > 0) {
      this.log.warn({ running: this.running.size }, "grace period over: aborting handlers and handing their jobs back");
      for (const running of this.running.values()) running.force({ kind: "shutdown", reason: new WorkerShutdownError() });
    }
    const cleanup = (async () => {
      await this.allEnded();
      await this.writer.drain();
      this.leases.stop();
      await Promise.allSettled([this.reclaimer.stop(), this.pruner?.stop(), this.historyUpkeep.stop(), this.registration.stop(), intake]);
      // The claim loop has ended: a claim answered after the stop began has
      // launched its jobs, which hand themselves back unstarted (launch).
      // Their writes are waited for too.
      await this.allEnded();
      await this.writer.drain();
      await this.claimStore.close();
      await this.workers.workerDeregister(this.id).catch((error: unknown) => {
        this.log.warn({ err: (error as Error).message }, "could not deregister worker; its row will age out");
      });
    })();
    if (!(await settlesWithin(cleanup, SHUTDOWN_CLEANUP_MS))) {
      this.log.warn(
        { unfinished: this.running.size, waitedMs: SHUTDOWN_CLEANUP_MS },
        "the database did not answer in time: stopped without it; jobs not handed back return when their leases expire",
      );
      this.leases.stop();
      void this.reclaimer.stop();
      void this.pruner?.stop();
      void this.historyUpkeep.stop();
      void this.registration.stop();
    }
    this.untrackActiveJobs();
    this.state = "stopped";
    this.log.info("worker stopped");
  }

  /** Enqueue the due ticks of this worker's cron schedules now (it also does this at each tick); returns jobs inserted. */
  enqueueDueTicks(): Promise<number> {
    return this.scheduler?.runDue() ?? Promise.resolve(0);
  }

  /** Sweep expired leases now (the worker also does this on its own interval). */
  reclaimExpired(): Promise<number> {
    return this.reclaimer.sweep();
  }

  private onNotification(queue: string): void {
    if (queue === "*" || this.options.queues === null || this.options.queues.includes(queue)) this.workAvailable.notify();
  }

  /**
   * A running job's cancel was committed (NOTIFY from the cancel's statement): abort
   * its handler's signal now, if this worker runs that attempt. The job ends
   * `cancelled` when the handler returns, as with a cancel the heartbeat finds.
   */
  private onCancelNotification(executionId: string): void {
    const running = this.running.get(executionId);
    this.testSignals.cancelNotified.signal({ executionId, held: running !== undefined });
    if (!running) return this.earlyCancels.note(executionId); // not ours, or claimed and not launched yet
    if (running.holdsLease && running.observeCancel(new JobCancelledError())) this.testSignals.cancelObserved.signal({ executionId, via: "notification" });
  }

  private async claimLoop(): Promise<void> {
    try {
      await this.claimRounds();
    } finally {
      this.testSignals.claimLoopEnded.signal();
    }
  }

  private async claimRounds(): Promise<void> {
    const { concurrency, claimBatchSize, pollIntervalMs, leaseMs, kinds, queues } = this.options;
    let backoff = ERROR_BACKOFF_MIN_MS;
    while (this.state === "running") {
      const free = concurrency - this.running.size;
      if (free <= 0) {
        await this.slotFreed.wait(pollIntervalMs);
        // Slots freed by one completion batch are released together: let them
        // all land before counting, so the next claim is one full batch.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      const wanted = Math.min(free, claimBatchSize);
      const sentAt = performance.now();
      let jobs: ClaimedJob[];
      try {
        jobs = await this.claims.claim({ workerId: this.id, limit: wanted, kinds, queues, leaseMs });
        backoff = ERROR_BACKOFF_MIN_MS;
      } catch (error) {
        this.recorders.databaseErrors.inc({ operation: "claim" });
        this.log.warn({ err: (error as Error).message, retryInMs: backoff }, "claiming jobs failed; backing off");
        await Promise.race([sleep(backoff), this.workAvailable.wait(backoff * 10)]);
        backoff = Math.min(backoff * 2, ERROR_BACKOFF_MAX_MS);
        continue;
      }
      if (jobs.length > 0 && this.deps.tracing.active) await readTraceContexts(this.store, jobs, this.log);
      for (let i = 0; i < jobs.length; i++) this.launch(jobs[i]!, this.claims.sentAtOf(i) ?? sentAt);
      countClaimed(this.recorders, jobs);
      this.testSignals.claimRound.signal({ claimed: jobs.length });
      if (jobs.length < wanted) {
        if (!this.workAvailable.pending && this.state === "running") this.testSignals.idle.signal();
        await this.workAvailable.wait(pollIntervalMs);
      }
    }
  }

  /**
   * Start one claimed attempt, unless its claim was answered past the lease's
   * local deadline (the claim's send time plus the lease: it errs early). Then
   * another worker may already have reclaimed and run the job: no handler
   * starts, nothing is written, and the reclaim sweep ends the attempt
   * (`lease_expired`) like any other expired lease.
   */
  private launch(job: ClaimedJob, claimSentAt: number): void {
    const definition = this.definitions.get(job.kind)!; // the claim only takes kinds we run
    const running = new Attempt(job, claimSentAt, this.options.leaseMs, keepsSucceeded(definition.retention));
    const lateByMs = performance.now() - running.leaseDeadline;
    if (lateByMs >= 0) {
      this.recorders.completed.inc({ kind: job.kind, outcome: "lease_lost" });
      this.log.warn(
        { jobId: job.id, executionId: running.executionId, lateByMs: Math.round(lateByMs), leaseMs: this.options.leaseMs },
        "the claim was answered after the lease could have expired; not starting the job (the reclaim sweep returns it)",
      );
      this.testSignals.attemptSkippedLate.signal({ jobId: job.id, executionId: running.executionId, lateByMs });
      return;
    }
    this.running.set(running.executionId, running);
    // Claimed by a claim answered only after the shutdown's grace period
    // ended (the stop waits for a claim in flight within the grace period,
    // and its jobs run as any other): the handler never starts, and the job
    // is handed back as every attempt the shutdown ends is (interrupted).
    if (this.grace?.isOver) running.force({ kind: "shutdown", reason: new WorkerShutdownError() });
    if (this.earlyCancels.take(running.executionId) && running.observeCancel(new JobCancelledError())) {
      this.testSignals.cancelObserved.signal({ executionId: running.executionId, via: "notification" });
    }
    this.recorders.dequeueWait.observe(Math.max(0, job.waitedMs / 1000));
    this.gatherer.run(definition, running, this.ended);
  }

  /**
   * An attempt's end was written or given up: only now does its slot free,
   * so the database never shows this worker holding more jobs than its
   * concurrency. One function for every attempt, not a closure per job.
   */
  private readonly ended = (running: Attempt): void => {
    this.running.delete(running.executionId);
    this.slotFreed.notify();
    if (this.running.size === 0 && this.endedWaiters.length > 0) {
      const waiters = this.endedWaiters;
      this.endedWaiters = [];
      for (const resolve of waiters) resolve();
    }
  };

  /** Resolves once this worker holds no attempt: every launched one has ended. */
  private allEnded(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.endedWaiters.push(resolve));
  }

  private async register(): Promise<void> {
    await this.workers.workerUpsert({
      id: this.id,
      hostname: hostname(),
      pid: process.pid,
      queues: this.options.queues,
      kinds: this.options.kinds,
      concurrency: this.options.concurrency,
      staleMs: WORKER_STALE_MS,
    });
  }

  private async refreshRegistration(): Promise<void> {
    await this.register();
    await this.listener?.ping();
  }
}
