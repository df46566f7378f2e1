import { z } from "zod";
import type { CronScheduleInfo } from "../core/cron.js";
import { isoOrNull } from "./serialize.js";

// A cron schedule as JSON, defined once: the zod schema (the HTTP API's
// response schema) and the mapping from the library's type, which `conveyor
// schedules --json` prints too.

const isoTime = z.iso.datetime({ offset: true });

/** A cron schedule as JSON: the stored schedule, with its times as ISO 8601 strings. */
export const scheduleShape = z.object({
  name: z.string(),
  kind: z.string(),
  cron: z.string().describe("5 fields, or 6 with seconds first"),
  timezone: z.string().describe("IANA time zone the fields are read in"),
  tenant: z.string(),
  queue: z.string(),
  priority: z.number().int(),
  payload: z.unknown().describe("the payload of every tick's job"),
  missed: z.object({
    policy: z.enum(["skip", "catch-up"]).describe("skip: only the latest missed tick; catch-up: the latest `limit`"),
    limit: z.number().int(),
  }),
  nextTickAt: isoTime.nullable().describe("the first tick not yet enqueued (in the past: overdue, no worker ran it since); null: never fires again"),
  lastTickAt: isoTime.nullable().describe("the newest tick enqueued; null until the first"),
  createdAt: isoTime,
  updatedAt: isoTime.describe("when the definition last changed"),
});

/** A cron schedule, as JSON. */
export type ScheduleJson = z.output<typeof scheduleShape>;

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
