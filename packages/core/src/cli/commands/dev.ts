import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { type Command, Option } from "commander";
import type { Logger } from "pino";
import type { Conveyor } from "../../conveyor.js";
import type { Worker } from "../../worker/worker.js";
import { DEFAULT_API_HOST, DEFAULT_API_PORT, DEFAULT_DEV_CONCURRENCY, DEFAULT_SCHEMA } from "../../core/defaults.js";
import { listenApi } from "../api-server.js";
import { devAdminKey } from "../dev-admin-key.js";
import { EXAMPLE_JOBS } from "../examples.js";
import { port, positiveInt } from "../parse.js";
import { untilSignal, withSession } from "../session.js";
import { startWebhookReceiver } from "../webhook-receiver.js";

/** The example webhook job signs with the secret in this variable (see examples/webhook.ts). */
const WEBHOOK_SECRET_ENV = "CONVEYOR_WEBHOOK_SECRET";

interface DevOptions {
  jobs: string;
  port: number;
  host: string;
  schema: string;
  concurrency: number;
  demo: boolean;
}

export function registerDev(program: Command): void {
  program
    .command("dev")
    .description(
      "development stack in one process: embedded PostgreSQL (or DATABASE_URL), migrations, the API and dashboard, " +
        "a local webhook receiver and a worker for the example jobs; prints the dashboard URL and an admin key",
    )
    .option("--port <port>", "port of the API and dashboard (0 picks a free one)", port, DEFAULT_API_PORT)
    .option("--host <address>", "address to bind (0.0.0.0 for every interface)", DEFAULT_API_HOST)
    .addOption(new Option("--jobs <module>", "jobs module").default(EXAMPLE_JOBS, "the bundled examples"))
    .option("--concurrency <n>", "jobs the worker runs at once", positiveInt, DEFAULT_DEV_CONCURRENCY)
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--no-demo", "do not enqueue the demo jobs at start")
    .action(async (options: DevOptions) => {
      // The worker runs in this process, so the example webhook job reads the
      // same secret the receiver checks. A fixed one can be given for scripts.
      const webhookSecret = (process.env[WEBHOOK_SECRET_ENV] ||= randomBytes(24).toString("base64url"));
      await withSession({ schema: options.schema, jobs: options.jobs, waitForDatabase: true }, async ({ conveyor, log, database }) => {
        // Listen for Ctrl-C before anything starts: one that arrives during
        // startup then stops the stack as soon as it is up, instead of killing
        // the process halfway.
        let worker: Worker | null = null;
        const stopSignal = untilSignal(log, "shutting down gracefully", () => void worker?.stop({ graceMs: 0 }));
        const receiver = await startWebhookReceiver({
          secret: webhookSecret,
          dir: resolve(process.cwd(), ".conveyor", "webhooks"),
          log: log.child({ component: "webhook-receiver" }),
        });
        try {
          const server = await listenApi(conveyor, { port: options.port, host: options.host });
          try {
            const admin = await devAdminKey(conveyor, process.env.CONVEYOR_ADMIN_KEY);
            if (options.demo && options.jobs === EXAMPLE_JOBS) await enqueueDemo(conveyor, log, receiver.url);
            worker = conveyor.worker({ concurrency: options.concurrency, shutdownGraceMs: 10_000, logger: log });
            // A handler's stray promise rejecting after it returned must not take the whole stack down.
            process.on("unhandledRejection", (reason) => log.error({ err: reason }, "unhandled promise rejection (ignored)"));
            await worker.start();
            process.stdout.write(
              banner([
                ["dashboard", `${server.url}/#key=${admin.key}`],
                ["API", `${server.url}/v1`],
                ["API docs", `${server.url}/docs  (interactive, Swagger UI)`],
                ["OpenAPI", `${server.url}/openapi.json  (the OpenAPI 3.1 document)`],
                ["admin key", `${admin.key}  (${admin.source})`],
                ["database", database === "env" ? "DATABASE_URL" : "embedded PostgreSQL, data in .conveyor/postgres"],
                ["webhooks", `${receiver.url}/hooks/<name>, saved in .conveyor/webhooks/`],
                ["email outbox", ".conveyor/outbox/"],
              ]),
            );
            log.info(
              { url: server.url, dashboard: `${server.url}/`, webhookReceiver: receiver.url, database, schema: options.schema },
              "dev stack running; Ctrl-C to stop",
            );
            await stopSignal;
            await worker.stop().catch((error: unknown) => log.error({ err: error }, "error during shutdown"));
          } finally {
            await server.close();
          }
        } finally {
          await receiver.close();
        }
      });
    });
}

function banner(rows: Array<[string, string]>): string {
  const width = Math.max(...rows.map(([label]) => label.length));
  return ["", "Conveyor dev stack is running. Ctrl-C stops everything.", ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`), "", ""].join(
    "\n",
  );
}

async function enqueueDemo(conveyor: Conveyor, log: Logger, webhookUrl: string): Promise<void> {
  const jobs = await conveyor.enqueueMany([
    { job: "email.send", payload: { to: "ada@example.com", subject: "Welcome to Conveyor", body: "Your first job ran." } },
    { job: "email.send", payload: { to: "nobody@invalid.example", subject: "Bounce", body: "This one dead-letters." } },
    { job: "text.summarize", payload: { text: "Conveyor runs background jobs on PostgreSQL. Jobs are leased, heartbeated and fenced. Nothing is lost." } },
    { job: "webhook.deliver", payload: { url: `${webhookUrl}/hooks/orders`, event: "order.created", data: { orderId: 1042, total: "19.90" } } },
    // The receiver answers 503 to the first delivery here: the job retries and succeeds on attempt 2.
    { job: "webhook.deliver", payload: { url: `${webhookUrl}/hooks/flaky`, event: "invoice.paid", data: { invoiceId: 77 } } },
  ]);
  log.info({ jobIds: jobs.map((job) => job.id) }, "enqueued demo jobs");
}
