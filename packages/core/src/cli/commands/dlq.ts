import { type Command, Option } from "commander";
import { DEFAULT_LIST_LIMIT, DEFAULT_SCHEMA, MAX_LIST_LIMIT } from "../../core/defaults.js";
import { NotFoundError } from "../../core/errors.js";
import type { DeadLetter } from "../../core/model.js";
import { deadLetterJson, jobJson } from "../../wire/serialize.js";
import { listLimit, uuid } from "../arguments.js";
import { withSession } from "../session.js";
import { formatFacts, formatTable, isoOrDash, printJson } from "../table.js";
import { indentJson } from "./jobs.js";

const schemaOption = () => new Option("--schema <name>", "schema holding Conveyor's tables").default(DEFAULT_SCHEMA);
const jsonOption = () => new Option("--json", "print the HTTP API's JSON for the same request").default(false);

/** `conveyor dlq list|show|requeue|purge`: the dead-letter queue, straight from the database. */
export function registerDlq(program: Command): void {
  const dlq = program.command("dlq").description("the dead-letter queue: list, show, requeue, purge (straight from the database)");

  dlq
    .command("list")
    .description("dead letters, newest first (one page; --cursor for the next)")
    .option("--kind <kind>", "only this kind")
    .option("--queue <queue>", "only this queue")
    .option("--tenant <tenant>", "only this tenant (default: every tenant)")
    .option("--limit <n>", `page size, 1-${MAX_LIST_LIMIT}`, listLimit, DEFAULT_LIST_LIMIT)
    .option("--cursor <cursor>", "the next page, as printed after the previous one")
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (options: { kind?: string; queue?: string; tenant?: string; limit: number; cursor?: string; schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const page = await conveyor.deadLetters.list({
          kind: options.kind,
          queue: options.queue,
          tenant: options.tenant ?? null,
          limit: options.limit,
          cursor: options.cursor,
        });
        if (options.json) return printJson({ items: page.items.map(deadLetterJson), nextCursor: page.nextCursor });
        if (page.items.length === 0) {
          process.stdout.write("the dead-letter queue is empty\n");
          return;
        }
        process.stdout.write(
          formatTable(
            ["ID", "JOB", "KIND", "QUEUE", "TENANT", "REASON", "ATTEMPTS", "DEAD AT", "LAST ERROR"],
            page.items.map((entry) => [
              entry.id,
              entry.jobId,
              entry.kind,
              entry.queue,
              entry.tenant,
              entry.reason,
              `${entry.attempts}/${entry.maxAttempts}`,
              isoOrDash(entry.deadAt),
              entry.lastError ? `${entry.lastError.name}: ${entry.lastError.message}`.slice(0, 60) : "",
            ]),
          ),
        );
        if (page.nextCursor) process.stdout.write(`more: --cursor ${page.nextCursor}\n`);
      });
    });

  dlq
    .command("show")
    .description("one dead letter: payload, last error and the whole history")
    .argument("<id>", "dead-letter id (from dlq list)", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const entry = await conveyor.deadLetters.get(id);
        if (!entry) throw new NotFoundError(`dead letter ${id} not found`);
        if (options.json) return printJson(deadLetterJson(entry));
        process.stdout.write(showDeadLetter(entry));
      });
    });

  dlq
    .command("requeue")
    .description("put the job back in its queue with fresh attempts (same job id, history kept)")
    .argument("<id>", "dead-letter id (from dlq list)", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const job = await conveyor.deadLetters.requeue(id);
        if (options.json) return printJson(jobJson(job));
        process.stdout.write(`requeued job ${job.id} (${job.kind}) in queue ${job.queue}\n`);
      });
    });

  dlq
    .command("purge")
    .description("delete a dead letter and its job, with the history, for good")
    .argument("<id>", "dead-letter id (from dlq list)", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        await conveyor.deadLetters.purge(id);
        if (options.json) return printJson({ purged: id });
        process.stdout.write(`purged dead letter ${id} and its job\n`);
      });
    });
}

function showDeadLetter(entry: DeadLetter): string {
  let text = formatFacts([
    ["id", entry.id],
    ["job", entry.jobId],
    ["kind", entry.kind],
    ["tenant", entry.tenant],
    ["queue", entry.queue],
    ["reason", entry.reason],
    ["attempts", `${entry.attempts}/${entry.maxAttempts}`],
    ["dead at", isoOrDash(entry.deadAt)],
    ["last error", entry.lastError ? `${entry.lastError.name}: ${entry.lastError.message}` : "-"],
  ]);
  text += `\npayload:\n${indentJson(entry.payload)}\n\nhistory:\n`;
  text +=
    entry.history.length === 0
      ? "  none\n"
      : formatTable(
          ["#", "OUTCOME", "WORKER", "STARTED", "FINISHED", "ERROR"],
          entry.history.map((attempt) => [
            String(attempt.attempt),
            attempt.outcome,
            attempt.workerId,
            isoOrDash(attempt.startedAt),
            isoOrDash(attempt.finishedAt),
            attempt.error ? `${attempt.error.name}: ${attempt.error.message}` : "",
          ]),
        )
          .split("\n")
          .map((line) => (line ? `  ${line}` : line))
          .join("\n");
  return text;
}
