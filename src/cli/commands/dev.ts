import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import type { Logger } from "pino";
import type { Conveyor } from "../../client/conveyor.js";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import { runWorkerUntilSignal } from "../run-worker.js";
import { withSession } from "../session.js";

const EXAMPLE_JOBS = fileURLToPath(new URL("../../../examples/jobs.js", import.meta.url));

export function registerDev(program: Command): void {
  program
    .command("dev")
    .description("development stack: embedded PostgreSQL (or DATABASE_URL), migrations and a worker for the example jobs")
    .option("--jobs <module>", "jobs module (default: the bundled examples)", EXAMPLE_JOBS)
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--no-demo", "do not enqueue the demo jobs at start")
    .action(async (options: { jobs: string; schema: string; demo: boolean }) => {
      await withSession({ schema: options.schema, jobs: options.jobs }, async ({ conveyor, log, database }) => {
        log.info({ schema: options.schema, database }, "schema ready");
        if (options.demo && options.jobs === EXAMPLE_JOBS) await enqueueDemo(conveyor, log);
        log.info("dev stack running; Ctrl-C to stop");
        await runWorkerUntilSignal(conveyor, { concurrency: 4 }, log);
      });
    });
}

async function enqueueDemo(conveyor: Conveyor, log: Logger): Promise<void> {
  const jobs = await conveyor.enqueueMany([
    { job: "email.send", payload: { to: "ada@example.com", subject: "Welcome to Conveyor", body: "Your first job ran." } },
    { job: "email.send", payload: { to: "nobody@invalid.example", subject: "Bounce", body: "This one dead-letters." } },
    { job: "text.summarize", payload: { text: "Conveyor runs background jobs on PostgreSQL. Jobs are leased, heartbeated and fenced. Nothing is lost." } },
  ]);
  log.info({ jobIds: jobs.map((job) => job.id) }, "enqueued demo jobs");
}
