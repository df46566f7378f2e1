#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { ConveyorError } from "../core/errors.js";
import { registerApi } from "./commands/api.js";
import { registerBulk } from "./commands/bulk.js";
import { registerDev } from "./commands/dev.js";
import { registerDlq } from "./commands/dlq.js";
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

// This file runs as dist/src/cli/main.js; package.json sits three levels up, in the installed package.
const { version } = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };

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
registerFlows(program);
registerDlq(program);
registerQueues(program);
registerTenants(program);
registerWorkers(program);
registerSchedules(program);
registerPrune(program);
registerBulk(program);

try {
  await program.parseAsync(process.argv);
  process.exit(0);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode);
  // One clear line, no stack: bad input, a missing database, an embedded server that would not start.
  const message = error instanceof ConveyorError || error instanceof Error ? error.message : String(error);
  process.stderr.write(`conveyor: ${message.split("\n")[0]}\n`);
  process.exit(1);
}
