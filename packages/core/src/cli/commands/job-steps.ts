import { type Command, Option } from "commander";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import type { StepRecord } from "../../core/steps.js";
import { jobJson } from "../../wire/serialize.js";
import { stepJson } from "../../wire/step-json.js";
import { uuid } from "../arguments.js";
import { withSession } from "../session.js";
import { formatTable, isoOrDash, printJson } from "../table.js";

const schemaOption = () => new Option("--schema <name>", "schema holding Conveyor's tables").default(DEFAULT_SCHEMA);
const jsonOption = () => new Option("--json", "print the HTTP API's JSON for the same request").default(false);

/** `conveyor jobs steps|resume|rerun`: a durable job's records, and running it again from them. */
export function registerJobSteps(jobs: Command): void {
  jobs
    .command("steps")
    .description("a job's steps, sleeps and waits in the order it first recorded them; --json prints { items }")
    .argument("<id>", "job id", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const records = await conveyor.steps.list(id);
        if (options.json) return printJson({ items: records.map(stepJson) });
        process.stdout.write(records.length === 0 ? `job ${id} has recorded no steps, sleeps or waits\n` : stepTable(records));
      });
    });

  jobs
    .command("resume")
    .description(
      "run a dead, sleeping, queued or retrying job again with fresh attempts, replaying every step it recorded " +
        "(a dead job leaves the dead-letter queue); prints its new status. A running, succeeded or cancelled job is refused (exit 1)",
    )
    .argument("<id>", "job id", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const job = await conveyor.steps.resume(id);
        if (options.json) return printJson(jobJson(job));
        process.stdout.write(`resumed ${job.id} (${job.kind}), its recorded steps kept: now ${job.status}\n`);
      });
    });

  jobs
    .command("rerun")
    .description(
      "run a job again from one of its steps: that step's record and every later one are forgotten, earlier ones replay; " +
        "applies where resume does; prints its new status",
    )
    .argument("<id>", "job id", uuid)
    .requiredOption("--from-step <name>", "the step, sleep or wait to run again (a name from jobs steps)")
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { fromStep: string; schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const job = await conveyor.steps.rerunFrom(id, options.fromStep);
        if (options.json) return printJson(jobJson(job));
        process.stdout.write(`rerunning ${job.id} (${job.kind}) from step ${JSON.stringify(options.fromStep)}: now ${job.status}\n`);
      });
    });
}

/** One row per record; a sleep's wake time, a wait's deadline, event and key where they apply. */
function stepTable(records: readonly StepRecord[]): string {
  return formatTable(
    ["NAME", "KIND", "STATE", "ATTEMPT", "STARTED", "FINISHED", "WAKE AT", "EVENT", "KEY"],
    records.map((record) => [
      record.name,
      record.kind,
      record.state,
      String(record.attempt),
      isoOrDash(record.startedAt),
      isoOrDash(record.finishedAt),
      record.kind === "step" ? "-" : record.wakeAt === null ? "no deadline" : isoOrDash(record.wakeAt),
      record.event ?? "-",
      record.eventKey === null ? "-" : record.eventKey === "" ? "(none)" : record.eventKey,
    ]),
  );
}
