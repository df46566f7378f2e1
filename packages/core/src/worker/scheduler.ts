import type { Logger } from "pino";
import type { MetricCounter } from "../metrics/metric-types.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import { type ResolvedCronSchedule, schedulePayload } from "../core/schedules.js";
import { type CronExpression, cronTickKey, dueTicks, parseCron } from "../core/cron.js";
import {
  CRON_CHECK_INTERVAL_MS,
  CRON_OVERDUE_RECHECK_MS,
  CRON_WAKE_SLACK_MS,
  ERROR_BACKOFF_MAX_MS,
  ERROR_BACKOFF_MIN_MS,
} from "../core/defaults.js";
import { uuidv7 } from "../core/ids.js";
import type { CronStore } from "../store/cron-store.js";
import type { Pool } from "../store/db.js";
import type { JobInsertRow } from "../store/job-insert-row.js";
import type { JobStore } from "../store/job-store.js";
import { withTransaction } from "../store/transaction.js";
import { TestSignal } from "./test-signal.js";
import { WakeSignal } from "./wake-signal.js";

/** The advance guard failed: someone moved the schedule under our lock (should not happen); roll the pass back. */
class ScheduleMoved extends Error {}

/** What the cron scheduler reports to tests (workerTestSignals in test-signals.ts); off until `init()`. */
export class CronSchedulerTestSignals {
  /** A pass committed, on the scheduler's loop or through `runDue()`; `enqueued`: the ticks it inserted. A pass that failed reports nothing. */
  readonly passed = new TestSignal<{ enqueued: number }>();

  init(): void {
    this.passed.init();
  }
}

/**
 * Enqueues the due ticks of the cron schedules of this worker's kinds. Every
 * worker runs one; there is no leader. A pass is one transaction: it holds the
 * due schedule rows (FOR UPDATE SKIP LOCKED), inserts one job per tick (with
 * `run_at` = the tick and the idempotency key `cron:<name>:<tick>`), and
 * advances each row only if its next tick is still the one it read. The
 * scheduler sleeps until the soonest next tick by the database clock, at most
 * `CRON_CHECK_INTERVAL_MS`.
 */
export class CronScheduler {
  private readonly names: string[];
  private readonly kinds: string[];
  private readonly wake = new WakeSignal();
  private readonly expressions = new Map<string, CronExpression>();
  private loop: Promise<void> | null = null;
  private stopped = false;
  /** For tests: each pass reported as it commits (workerTestSignals). */
  readonly testSignals = new CronSchedulerTestSignals();

  constructor(
    private readonly pool: Pool,
    private readonly jobs: JobStore,
    private readonly cron: CronStore,
    private readonly schedules: readonly ResolvedCronSchedule[],
    private readonly definitions: ReadonlyMap<string, AnyJobDefinition>,
    private readonly log: Logger,
    /** Ticks this scheduler enqueued, by schedule (the worker's `conveyor_cron_ticks_enqueued_total`). */
    private readonly ticksEnqueued: MetricCounter<"schedule"> | null = null,
  ) {
    this.names = schedules.map((schedule) => schedule.name);
    this.kinds = [...new Set(schedules.map((schedule) => schedule.kind))];
  }

  /**
   * Check every schedule's payload against its kind's schema (a ConfigError
   * naming the schedule otherwise) and write the definitions to
   * `cron_schedules`: new ones start at their next tick after now; a changed
   * cron expression or time zone restarts from its next tick after now; an
   * unchanged one keeps its next tick, so ticks missed while down are found.
   */
  async prepare(): Promise<void> {
    const payloads = await this.checkPayloads();
    if (this.schedules.length === 0) return;
    const now = await this.cron.cronNow();
    for (const [index, schedule] of this.schedules.entries()) {
      await this.cron.cronScheduleUpsert({
        name: schedule.name,
        kind: schedule.kind,
        cron: schedule.cron,
        timezone: schedule.timezone,
        tenant: schedule.tenant,
        queue: schedule.queue,
        priority: schedule.priority,
        payload: payloads[index]!,
        missedPolicy: schedule.missed.policy,
        catchUpLimit: schedule.missed.limit,
        nextTickAt: this.expressionOf(schedule).nextTick(now),
      });
    }
  }

  /** Check every schedule's payload (as `prepare` does first) without the database; the encoded payloads, in schedule order. */
  async checkPayloads(): Promise<string[]> {
    const payloads = [];
    for (const schedule of this.schedules) payloads.push(await schedulePayload(this.definitions.get(schedule.kind)!.schema, schedule));
    return payloads;
  }

  /** Start waking for due ticks (after `prepare`). */
  start(): void {
    if (this.schedules.length === 0) return;
    this.loop = this.run();
  }

  /** Stop waking; waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake.notify();
    await this.loop;
  }

  /** Enqueue every due tick of this worker's schedules now; returns how many jobs were inserted. */
  async runDue(): Promise<number> {
    if (this.schedules.length === 0) return 0;
    const enqueued = await this.insertDue();
    // Counted once committed: a pass that rolled back enqueued nothing.
    for (const schedule of enqueued) this.ticksEnqueued?.inc({ schedule });
    this.testSignals.passed.signal({ enqueued: enqueued.length });
    return enqueued.length;
  }

  /** One pass in one transaction; returns the schedule of each tick it inserted. */
  private insertDue(): Promise<string[]> {
    return withTransaction(this.pool, async (client) => {
      const { now, due } = await this.cron.cronScheduleLockDue(this.names, this.kinds, client);
      const rows: JobInsertRow[] = [];
      const scheduleOf: string[] = []; // aligned with rows
      for (const schedule of due) {
        const definition = this.definitions.get(schedule.kind)!; // the lock only takes our kinds
        let expression: CronExpression;
        try {
          expression = this.expressionOf(schedule);
        } catch (error) {
          // Written by another worker whose runtime knows a time zone this one does not: leave it to that worker.
          this.log.warn({ schedule: schedule.name, err: (error as Error).message }, "cannot read this cron schedule here; skipping it");
          continue;
        }
        const { ticks, skipped, nextTick } = dueTicks(expression, schedule.nextTickAt!, now, schedule.missed.policy, schedule.missed.limit);
        if (skipped) {
          this.log.warn(
            { schedule: schedule.name, since: schedule.nextTickAt, enqueued: ticks.length, policy: schedule.missed.policy },
            "missed cron ticks were skipped",
          );
        }
        const payload = JSON.stringify(schedule.payload);
        for (const tick of ticks) {
          rows.push({
            id: uuidv7(now.getTime()), // the database's clock, as every id's
            tenant: schedule.tenant,
            queue: schedule.queue,
            kind: schedule.kind,
            payload,
            priority: schedule.priority,
            maxAttempts: definition.maxAttempts,
            runAt: tick,
            delayMs: null,
            idempotencyKey: cronTickKey(schedule.name, tick),
            unique: null,
          });
          scheduleOf.push(schedule.name);
        }
        const advanced = await this.cron.cronScheduleAdvance(schedule.name, schedule.nextTickAt, nextTick, ticks.at(-1) ?? null, client);
        if (!advanced) throw new ScheduleMoved(`cron schedule "${schedule.name}" moved during the pass`);
      }
      // Keys already present (a tick enqueued before a schedule row was reset) are skipped, not duplicated.
      const inserted = rows.length > 0 ? await this.jobs.jobInsertMany(rows, client) : [];
      const enqueued = scheduleOf.filter((_, i) => inserted[i] !== null);
      if (enqueued.length > 0) this.log.debug({ count: enqueued.length }, "enqueued cron ticks");
      return enqueued;
    });
  }

  private async run(): Promise<void> {
    let backoff = ERROR_BACKOFF_MIN_MS;
    while (!this.stopped) {
      let delay: number;
      try {
        await this.runDue();
        const { now, nextTickAt } = await this.cron.cronScheduleNextDue(this.names, this.kinds);
        delay = nextTickAt === null ? CRON_CHECK_INTERVAL_MS : nextTickAt.getTime() - now.getTime();
        // Still due after our pass: another worker holds it right now (or it cannot be read here). Look again soon.
        delay = delay <= 0 ? CRON_OVERDUE_RECHECK_MS : Math.min(CRON_CHECK_INTERVAL_MS, delay + CRON_WAKE_SLACK_MS);
        backoff = ERROR_BACKOFF_MIN_MS;
      } catch (error) {
        if (this.stopped) return;
        this.log.warn({ err: (error as Error).message, retryInMs: backoff }, "cron pass failed; backing off");
        delay = backoff;
        backoff = Math.min(backoff * 2, ERROR_BACKOFF_MAX_MS);
      }
      if (!this.stopped) await this.wake.wait(delay);
    }
  }

  /** Parsed once per expression and time zone (rows may carry another worker's newer definition). */
  private expressionOf(schedule: { name: string; cron: string; timezone: string }): CronExpression {
    const key = `${schedule.timezone}\u0000${schedule.cron}`;
    let expression = this.expressions.get(key);
    if (!expression) {
      expression = parseCron(schedule.cron, schedule.timezone, `cron schedule "${schedule.name}": cron`, `cron schedule "${schedule.name}": timezone`);
      this.expressions.set(key, expression);
    }
    return expression;
  }
}
