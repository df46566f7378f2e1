import { type Command, Option } from "commander";
import {
  DEFAULT_EVENT_RETENTION_MS,
  DEFAULT_RETENTION_BATCH_SIZE,
  DEFAULT_RETENTION_DEAD_LETTER_MS,
  DEFAULT_RETENTION_FINISHED_MS,
  DEFAULT_SCHEMA,
  MAX_RETENTION_BATCH_SIZE,
} from "../../core/defaults.js";
import { formatDuration } from "../../core/duration.js";
import { durationArgument } from "../duration-argument.js";
import { withDefault } from "../help-text.js";
import { positiveInt } from "../parse.js";
import { withSession } from "../session.js";
import { printJson } from "../table.js";

/** `conveyor prune`: delete old finished jobs and dead letters now, as every worker also does on its own. */
export function registerPrune(program: Command): void {
  program
    .command("prune")
    .description("delete succeeded/cancelled jobs and dead letters older than the given ages, in small batches")
    .addOption(
      new Option("--finished-older-than <dur>", "age of succeeded/cancelled jobs to delete (7d, 12h, 30m, 45s, 500ms or ms)")
        .argParser(durationArgument)
        .default(DEFAULT_RETENTION_FINISHED_MS, formatDuration(DEFAULT_RETENTION_FINISHED_MS)),
    )
    .addOption(
      new Option("--dead-older-than <dur>", "age of dead letters to delete, with their jobs")
        .argParser(durationArgument)
        .default(DEFAULT_RETENTION_DEAD_LETTER_MS, formatDuration(DEFAULT_RETENTION_DEAD_LETTER_MS)),
    )
    .addOption(
      new Option("--events-older-than <dur>", "age of sent events to delete")
        .argParser(durationArgument)
        .default(DEFAULT_EVENT_RETENTION_MS, formatDuration(DEFAULT_EVENT_RETENTION_MS)),
    )
    .option("--batch-size <n>", withDefault(`rows per delete statement, 1-${MAX_RETENTION_BATCH_SIZE}`, DEFAULT_RETENTION_BATCH_SIZE), positiveInt)
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--json", 'print {"jobs": n, "deadLetters": n, "flows": n, "events": n}', false)
    .action(async (options: { finishedOlderThan: number; deadOlderThan: number; eventsOlderThan: number; batchSize?: number; schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const result = await conveyor.prune({
          finishedMs: options.finishedOlderThan,
          deadLetterMs: options.deadOlderThan,
          eventsMs: options.eventsOlderThan,
          ...(options.batchSize ? { batchSize: options.batchSize } : {}),
        });
        if (options.json) return printJson(result);
        process.stdout.write(
          `pruned ${result.jobs} finished jobs (older than ${formatDuration(options.finishedOlderThan)}), ` +
            `${result.deadLetters} dead letters (older than ${formatDuration(options.deadOlderThan)}), ` +
            `${result.flows} emptied flows and ${result.events} events (older than ${formatDuration(options.eventsOlderThan)})\n`,
        );
      });
    });
}
