#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { CommanderError } from "commander";
import { ConveyorError } from "../core/errors.js";
import { createProgram } from "./program.js";
import { StoppedWhileWaiting } from "./session.js";

// This file runs as dist/src/cli/main.js; package.json sits three levels up, in the installed package.
const { version } = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };

const program = createProgram(version);

try {
  await program.parseAsync(process.argv);
  process.exit(0);
} catch (error) {
  if (error instanceof CommanderError) process.exit(error.exitCode);
  if (error instanceof StoppedWhileWaiting) process.exit(0); // a SIGTERM before the database answered: nothing to stop
  // One clear line, no stack: bad input, a missing database, an embedded server that would not start.
  const message = error instanceof ConveyorError || error instanceof Error ? error.message : String(error);
  process.stderr.write(`conveyor: ${message.split("\n")[0]}\n`);
  process.exit(1);
}
