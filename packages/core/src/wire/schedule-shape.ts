import { z } from "zod";

// The zod schema of a cron schedule as JSON (the HTTP API's response
// schema), and its JSON type; the mapping is in schedule-json.ts, which
// loads without zod for the CLI.

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
