import type { CronScheduleInfo } from "../core/cron.js";

/** A cron schedule as the API shows it: camelCase, times as ISO 8601 strings. */
export interface ScheduleJson {
  name: string;
  kind: string;
  cron: string;
  timezone: string;
  tenant: string;
  queue: string;
  priority: number;
  payload: unknown;
  missed: { policy: "skip" | "catch-up"; limit: number };
  nextTickAt: string | null;
  lastTickAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export function scheduleJson(schedule: CronScheduleInfo): ScheduleJson {
  return {
    name: schedule.name,
    kind: schedule.kind,
    cron: schedule.cron,
    timezone: schedule.timezone,
    tenant: schedule.tenant,
    queue: schedule.queue,
    priority: schedule.priority,
    payload: schedule.payload,
    missed: { policy: schedule.missed.policy, limit: schedule.missed.limit },
    nextTickAt: schedule.nextTickAt ? schedule.nextTickAt.toISOString() : null,
    lastTickAt: schedule.lastTickAt ? schedule.lastTickAt.toISOString() : null,
    createdAt: schedule.createdAt.toISOString(),
    updatedAt: schedule.updatedAt.toISOString(),
  };
}
