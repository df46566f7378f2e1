import type { Command } from "commander";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import { JOB_STATUSES } from "../../core/states.js";
import { withSession } from "../session.js";
import { formatTable, humanDuration, printJson } from "../table.js";
import { registerKeyLimits } from "./key-limits.js";
import { describeLimits, registerQueueSettings } from "./queue-settings.js";

/** `conveyor queues`: every queue with its jobs by status and the age of its oldest ready job. */
export function registerQueues(program: Command): void {
  const queues = program
    .command("queues")
    .description("queues with their jobs by status (~: the planner's estimate, beyond 1,000) and how long the oldest ready job has waited")
    .option("--tenant <tenant>", "count only this tenant's jobs (default: every tenant)")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--json", "print the HTTP API's JSON for the same request", false)
    .action(async (options: { tenant?: string; schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const items = await conveyor.queueOverview.queueStats({ tenant: options.tenant ?? null });
        if (options.json) return printJson({ items });
        if (items.length === 0) {
          process.stdout.write("no queues yet (a queue appears with its first job)\n");
          return;
        }
        process.stdout.write(
          formatTable(
            ["QUEUE", ...JOB_STATUSES.map((status) => status.toUpperCase()), "OLDEST READY", "LIMITS"],
            items.map((queue) => [
              queue.queue,
              ...JOB_STATUSES.map((status) => `${queue.estimated[status] ? "~" : ""}${queue.counts[status]}`),
              queue.oldestReadyAgeMs === null ? "-" : humanDuration(queue.oldestReadyAgeMs),
              describeLimits(queue),
            ]),
          ),
        );
      });
    });
  registerQueueSettings(queues);
  registerKeyLimits(queues);
}
