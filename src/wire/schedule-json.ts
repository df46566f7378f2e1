import type { CronScheduleInfo } from "../core/cron.js";
import { isoOrNull } from "./serialize.js";

type ScheduleTimes = "nextTickAt" | "lastTickAt" | "createdAt" | "updatedAt";

/** A cron schedule as the API shows it: the stored schedule, with its times as ISO 8601 strings. */
export type ScheduleJson = Omit<CronScheduleInfo, ScheduleTimes> & {
  nextTickAt: string | null;
  lastTickAt: string | null;
  createdAt: string;
  updatedAt: string;
};

export function scheduleJson(schedule: CronScheduleInfo): ScheduleJson {
  return {
    ...schedule,
    missed: { ...schedule.missed },
    nextTickAt: isoOrNull(schedule.nextTickAt),
    lastTickAt: isoOrNull(schedule.lastTickAt),
    createdAt: schedule.createdAt.toISOString(),
    updatedAt: schedule.updatedAt.toISOString(),
  };
}
