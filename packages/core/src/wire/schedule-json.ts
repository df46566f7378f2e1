import type { CronScheduleInfo } from "../core/cron.js";
import type { ScheduleJson } from "./schedule-shape.js";
import { isoOrNull } from "./serialize.js";

// A cron schedule as JSON, defined once: the zod schema (schedule-shape.ts,
// the HTTP API's response schema) and the mapping from the library's type
// here, which `conveyor schedules --json` prints too.

export type { ScheduleJson } from "./schedule-shape.js";

/** A cron schedule as JSON. */
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
    nextTickAt: isoOrNull(schedule.nextTickAt),
    lastTickAt: isoOrNull(schedule.lastTickAt),
    createdAt: schedule.createdAt.toISOString(),
    updatedAt: schedule.updatedAt.toISOString(),
  };
}
