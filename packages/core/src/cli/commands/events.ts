import { type Command, Option } from "commander";
import { DEFAULT_SCHEMA, DEFAULT_TENANT } from "../../core/defaults.js";
import { ValidationError } from "../../core/errors.js";
import { sentEventJson } from "../../wire/step-json.js";
import { withDefault } from "../help-text.js";
import { parseJsonArgument } from "../json-argument.js";
import { withSession } from "../session.js";
import { printJson } from "../table.js";

const schemaOption = () => new Option("--schema <name>", "schema holding Conveyor's tables").default(DEFAULT_SCHEMA);
const jsonOption = () => new Option("--json", "print the HTTP API's JSON for the same request").default(false);

/** `conveyor events send`: events for the jobs that wait for them (durable execution's `waitForEvent`). */
export function registerEvents(program: Command): void {
  const events = program.command("events").description("send events to jobs waiting for them (waitForEvent)");

  events
    .command("send")
    .description(
      "store an event and wake every job of its tenant whose waitForEvent waits for it (same name and key); " +
        "a job enqueued before it receives it too when it reaches such a wait later. --json prints { id, jobIds }",
    )
    .argument("<event>", "the event's name, as waitForEvent names it")
    .option("--key <key>", withDefault("the key a wait must match, e.g. an account id", "none, which matches waits without a key"))
    .option("--payload <json>", withDefault("any JSON value, handed to each wait it wakes", "null"))
    .option("--tenant <tenant>", withDefault("tenant whose waits it may wake", JSON.stringify(DEFAULT_TENANT)))
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (event: string, options: { key?: string; payload?: string; tenant?: string; schema: string; json: boolean }) => {
      // Read before connecting: a payload that is not JSON stores nothing.
      const payload = options.payload === undefined ? undefined : parseJsonArgument(options.payload, "payload");
      if (options.payload !== undefined && payload === undefined) throw new ValidationError("payload is empty: give a JSON value, e.g. null or {}");
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const sent = await conveyor.sendEvent({ event, key: options.key, payload, tenant: options.tenant });
        if (options.json) return printJson(sentEventJson(sent));
        const woken = sent.jobIds.length;
        process.stdout.write(
          woken === 0
            ? `sent event ${sent.id}; no job was waiting for it (a job enqueued before it receives it when it reaches a matching wait)\n`
            : `sent event ${sent.id}; woke ${woken} job${woken === 1 ? "" : "s"}:\n${sent.jobIds.map((id) => `  ${id}\n`).join("")}`,
        );
      });
    });
}
