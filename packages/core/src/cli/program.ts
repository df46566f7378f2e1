import { Command } from "commander";
import { registerApi } from "./commands/api.js";
import { registerBulk } from "./commands/bulk.js";
import { registerDev } from "./commands/dev.js";
import { registerDlq } from "./commands/dlq.js";
import { registerEvents } from "./commands/events.js";
import { registerFlows } from "./commands/flows.js";
import { registerJobs } from "./commands/jobs.js";
import { registerKeys } from "./commands/keys.js";
import { registerMigrate } from "./commands/migrate.js";
import { registerPrune } from "./commands/prune.js";
import { registerQueues } from "./commands/queues.js";
import { registerSchedules } from "./commands/schedules.js";
import { registerTenants } from "./commands/tenants.js";
import { registerWorker } from "./commands/worker.js";
import { registerWorkers } from "./commands/workers.js";

/**
 * The `conveyor` command with every subcommand registered, not yet parsed:
 * main.ts runs it, and tests read its help without starting a process.
 */
export function createProgram(version: string): Command {
  const program = new Command("conveyor")
    .description("Background jobs on PostgreSQL")
    .version(version, "-V, --version", "print the version")
    .exitOverride();
  registerMigrate(program);
  registerWorker(program);
  registerDev(program);
  registerApi(program);
  registerKeys(program);
  registerJobs(program);
  registerEvents(program);
  registerFlows(program);
  registerDlq(program);
  registerQueues(program);
  registerTenants(program);
  registerWorkers(program);
  registerSchedules(program);
  registerPrune(program);
  registerBulk(program);
  return program;
}
