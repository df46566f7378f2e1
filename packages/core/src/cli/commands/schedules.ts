import type { Command } from "commander";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import { scheduleJson } from "../../wire/schedule-json.js";
import { withSession } from "../session.js";
import { formatTable, isoOrDash, printJson } from "../table.js";

/** `conveyor schedules`: the stored cron schedules with their next and last tick. */
export function registerSchedules(program: Command): void {
  program
    .command("schedules")
    .description("cron schedules: expression, time zone, next and last tick, missed-tick policy")
    .option("--tenant <tenant>", "only this tenant's schedules (default: every tenant)")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--json", "print the HTTP API's JSON for the same request", false)
    .action(async (options: { tenant?: string; schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const schedules = await conveyor.listSchedules({ tenant: options.tenant ?? null });
        if (options.json) return printJson({ items: schedules.map(scheduleJson) });
        if (schedules.length === 0) {
          process.stdout.write("no cron schedules yet (a schedule appears when a worker running its kind starts)\n");
          return;
        }
        process.stdout.write(
          formatTable(
            ["NAME", "KIND", "CRON", "TIMEZONE", "TENANT", "QUEUE", "MISSED", "NEXT TICK", "LAST TICK"],
            schedules.map((schedule) => [
              schedule.name,
              schedule.kind,
              schedule.cron,
              schedule.timezone,
              schedule.tenant,
              schedule.queue,
              schedule.missed.policy === "skip" ? "skip" : `catch-up ${schedule.missed.limit}`,
              schedule.nextTickAt === null ? "never" : isoOrDash(schedule.nextTickAt),
              isoOrDash(schedule.lastTickAt),
            ]),
          ),
        );
      });
    });
}
