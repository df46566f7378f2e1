/**
 * Cron arithmetic, pure: parse an expression in a time zone, find the next
 * tick after a time, and pick the ticks that are due between the last one
 * handled and now under a missed-tick policy. Parsing and calendar work are
 * croner's (time zones and DST included); the policy is ours.
 */
import { Cron } from "croner";
import { ConfigError } from "./errors.js";

/** What to do with ticks that came due while no worker ran the schedule. */
export type CronMissedPolicy = "skip" | "catch-up";

/** A cron schedule as stored in `cron_schedules` (what `listSchedules` returns). */
export interface CronScheduleInfo {
  /** The schedule's name. */
  name: string;
  /** The job kind it enqueues. */
  kind: string;
  /** The cron expression. */
  cron: string;
  /** The time zone its fields are read in. */
  timezone: string;
  /** The tenant its jobs belong to. */
  tenant: string;
  /** The queue its jobs go to. */
  queue: string;
  /** Its jobs' priority. */
  priority: number;
  /** The payload of every tick's job, as the kind's schema parsed it. */
  payload: unknown;
  /** What happens to missed ticks, and how many one catch-up enqueues. */
  missed: {
    /** skip, run-once or catch-up (see `CronMissedPolicy`). */
    policy: CronMissedPolicy;
    /** Most ticks one catch-up pass enqueues. */
    limit: number;
  };
  /** The first tick not yet enqueued (in the past: overdue, no worker has handled it yet); null: never fires again. */
  nextTickAt: Date | null;
  /** The newest tick enqueued; null until the first. */
  lastTickAt: Date | null;
  /** When the schedule was first stored. */
  createdAt: Date;
  /** When the definition last changed. */
  updatedAt: Date;
}

/** A parsed cron expression bound to a time zone. */
export interface CronExpression {
  readonly cron: string;
  /** IANA time zone the fields are read in, e.g. `Europe/Berlin`. */
  readonly timezone: string;
  /** The first tick strictly after `after`, or null when the expression never fires again. */
  nextTick(after: Date): Date | null;
  /** Up to `count` ticks at or before `atOrBefore`, most recent first. */
  previousTicks(count: number, atOrBefore: Date): Date[];
}

/** Throw a ConfigError naming `field` unless `timezone` is an IANA time zone this runtime knows. */
export function checkTimezone(timezone: unknown, field: string): asserts timezone is string {
  if (typeof timezone !== "string" || timezone.length === 0) {
    throw new ConfigError(`${field} must be an IANA time zone such as "Europe/Berlin", got ${JSON.stringify(timezone)}`);
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    throw new ConfigError(`${field}: unknown time zone ${JSON.stringify(timezone)} (use an IANA name such as "Europe/Berlin" or "UTC")`);
  }
}

/**
 * Parse a cron expression of 5 fields (minute hour day-of-month month
 * day-of-week) or 6 (seconds first), read in `timezone`. Throws a
 * ConfigError naming `field` (and `timezoneField`) for a bad expression, an
 * unknown time zone, or an expression that never fires.
 */
export function parseCron(cron: unknown, timezone: unknown, field: string, timezoneField = `${field}.timezone`): CronExpression {
  if (typeof cron !== "string" || cron.trim().length === 0) {
    throw new ConfigError(`${field} must be a cron expression such as "*/5 * * * *", got ${JSON.stringify(cron)}`);
  }
  checkTimezone(timezone, timezoneField);
  let parsed: Cron;
  try {
    // 5 or 6 fields only: croner's 7th (year) field is not cron as people know it.
    parsed = new Cron(cron, { paused: true, timezone, mode: "5-or-6-parts" });
  } catch (error) {
    throw new ConfigError(`${field}: invalid cron expression ${JSON.stringify(cron)}: ${(error as Error).message}`);
  }
  if (parsed.nextRun(new Date()) === null) throw new ConfigError(`${field}: cron expression ${JSON.stringify(cron)} never fires`);
  return Object.freeze({
    cron,
    timezone,
    nextTick: (after: Date) => parsed.nextRun(after),
    // croner excludes a run exactly at its reference; ticks are whole seconds, so 1 ms later includes it.
    previousTicks: (count: number, atOrBefore: Date) => parsed.previousRuns(count, new Date(atOrBefore.getTime() + 1)),
  });
}

/** The ticks one pass enqueues, and where the schedule stands afterwards. */
export interface DueTicks {
  /** Ticks to enqueue now, oldest first. */
  ticks: Date[];
  /** True when older due ticks were dropped by the policy (not enqueued, never will be). */
  skipped: boolean;
  /** The first tick after `now`: the schedule's next tick once these are enqueued (null: never fires again). */
  nextTick: Date | null;
}

/**
 * Which ticks are due: every tick `t` with `firstDue <= t <= now`, where
 * `firstDue` is the schedule's first tick not yet handled.
 *
 * - `catch-up`: the most recent `limit` of them (each enqueued with its own
 *   tick time); older ones are skipped.
 * - `skip`: only the most recent one; older ones are skipped. A tick is not
 *   "missed" just because the worker woke a little late: if only one tick is
 *   due, it is enqueued under either policy.
 */
export function dueTicks(expression: CronExpression, firstDue: Date, now: Date, policy: CronMissedPolicy, limit: number): DueTicks {
  const nextTick = expression.nextTick(now);
  if (firstDue.getTime() > now.getTime()) return { ticks: [], skipped: false, nextTick: firstDue };
  const window = policy === "skip" ? 1 : limit;
  // One more than the window tells whether anything older than it was dropped.
  const recent = expression.previousTicks(window + 1, now).filter((tick) => tick.getTime() >= firstDue.getTime());
  const ticks = recent.slice(0, window).reverse();
  return { ticks, skipped: recent.length > ticks.length, nextTick };
}

/** The idempotency key of a schedule's tick job: `cron:<schedule>:<tick ISO time>`, the second guard against a tick enqueued twice. */
export function cronTickKey(schedule: string, tick: Date): string {
  return `cron:${schedule}:${tick.toISOString()}`;
}

const TICK_KEY = /^cron:(.+):(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/;

/** The schedule and tick a tick job's idempotency key names; null for any other key. */
export function parseCronTickKey(key: string | null): { schedule: string; at: Date } | null {
  const match = key === null ? null : TICK_KEY.exec(key);
  return match ? { schedule: match[1]!, at: new Date(match[2]!) } : null;
}
