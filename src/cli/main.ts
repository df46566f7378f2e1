#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { ConveyorError } from "../core/errors.js";
import { registerDev } from "./commands/dev.js";
import { registerMigrate } from "./commands/migrate.js";
import { registerWorker } from "./commands/worker.js";

const program = new Command("conveyor")
  .description("Background jobs on PostgreSQL")
  .showHelpAfterError("(run with --help for usage)")
  .exitOverride();

registerMigrate(program);
registerWorker(program);
registerDev(program);

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
