#!/usr/bin/env node
// The `conveyor` command. It is committed, not built, so that npm links it
// in a fresh clone before `prepare` has built the CLI; and it is plain
// JavaScript that any Node.js parses, so an older Node gets one line naming
// the version instead of a syntax or import error from deep in the CLI.
// The minimum is engines.node's (test/package/node-version.test.ts checks it).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const MIN_NODE_MAJOR = 22;

const major = Number(process.versions.node.split(".")[0]);
if (major < MIN_NODE_MAJOR) {
  process.stderr.write(`conveyor: needs Node.js ${MIN_NODE_MAJOR} or newer; this is v${process.versions.node}\n`);
  process.exit(1);
}

const cli = new URL("../dist/src/cli/main.js", import.meta.url);
if (!existsSync(fileURLToPath(cli))) {
  process.stderr.write("conveyor: the CLI is not built: run `npm run build` in the repository\n");
  process.exit(1);
}
import(cli.href);
