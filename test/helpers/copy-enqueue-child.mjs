// Child process for the COPY fault tests: one library `enqueueMany` of
// <count> jobs (the COPY path from COPY_MIN_ROWS up), through the build, with
// the database's faults left to the test. It prints one JSON line when the
// call starts and one with how the call settled (resolved, or rejected: the
// error's class, code and message), then waits a second, so an 'error' event
// nobody handles (a dead connection's, arriving after the rejection) still
// crashes it before it exits. Exit code 0: no crash.
// Usage: node copy-enqueue-child.mjs <databaseUrl> <schema> <count>
import pino from "pino";
import { z } from "zod";
import { Conveyor, ConveyorError, DatabaseError, defineJob } from "../../packages/core/dist/src/index.js";

const [databaseUrl, schema, countText] = process.argv.slice(2);
const count = Number(countText);
const item = defineJob({ kind: "copy.item", schema: z.object({ n: z.number().int(), text: z.string() }), handler: async () => {} });
const conveyor = new Conveyor({ connectionString: databaseUrl, schema, jobs: [item], poolSize: 2, logger: pino({ level: "silent" }) });
const say = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

const items = Array.from({ length: count }, (_, n) => ({ job: item, payload: { n, text: `job ${n} of a large batch` } }));
say({ event: "enqueuing", count, pid: process.pid });
const startedAt = Date.now();
try {
  const jobs = await conveyor.enqueueMany(items);
  say({ event: "resolved", count: jobs.length, ms: Date.now() - startedAt });
} catch (error) {
  say({
    event: "rejected",
    ms: Date.now() - startedAt,
    name: error?.name,
    className: error?.constructor?.name,
    code: error instanceof ConveyorError ? error.code : null,
    databaseError: error instanceof DatabaseError,
    message: String(error?.message ?? error),
  });
}
await new Promise((resolve) => setTimeout(resolve, 1_000));
await conveyor.close().catch(() => {});
