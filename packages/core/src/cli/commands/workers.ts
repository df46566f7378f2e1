import type { Command } from "commander";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import { workerJson } from "../../wire/serialize.js";
import { withSession } from "../session.js";
import { formatTable, humanDuration, isoOrDash, printJson } from "../table.js";

/** `conveyor workers`: live workers and the jobs each is running. */
export function registerWorkers(program: Command): void {
  program
    .command("workers")
    .description("live workers: host, pid, queues, concurrency and the jobs each is running")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--json", "print the HTTP API's JSON for the same request", false)
    .action(async (options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const workers = await conveyor.queueOverview.listWorkers();
        if (options.json) return printJson({ items: workers.map(workerJson) });
        if (workers.length === 0) {
          process.stdout.write("no live workers\n");
          return;
        }
        process.stdout.write(
          formatTable(
            ["ID", "HOST", "PID", "QUEUES", "RUNNING", "STARTED", "LAST SEEN", "RUNNING JOBS"],
            workers.map((worker) => [
              worker.id,
              worker.hostname,
              String(worker.pid),
              worker.queues ? worker.queues.join(",") : "all",
              `${worker.runningJobIds.length}/${worker.concurrency}`,
              isoOrDash(worker.startedAt),
              `${humanDuration(Date.now() - worker.lastSeenAt.getTime())} ago`,
              worker.runningJobIds.join(","),
            ]),
          ),
        );
      });
    });
}
