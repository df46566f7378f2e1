import { type Command, InvalidArgumentError } from "commander";
import type { QueueSettings, RateLimit } from "../../core/queue-settings.js";
import { ValidationError } from "../../core/errors.js";
import { withSession } from "../session.js";
import { humanDuration, printJson } from "../table.js";

// Parsers answer "none" rather than null: commander turns a parsed null into "".

/** `--concurrency`: a whole number >= 1, or "none" to remove the cap. */
export function concurrencyArg(value: string): number | "none" {
  if (value === "none") return "none";
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError(`expected a whole number >= 1 or "none", got "${value}"`);
  return Number(value);
}

/** `--rate`: `<count>/<interval ms>` (e.g. 100/60000), or "none" to remove the rate limit. */
export function rateArg(value: string): RateLimit | "none" {
  if (value === "none") return "none";
  const match = /^(\d+)\/(\d+)$/.exec(value);
  if (!match) throw new InvalidArgumentError(`expected <count>/<interval ms> such as 100/60000, or "none"; got "${value}"`);
  return { count: Number(match[1]), intervalMs: Number(match[2]) };
}

/** "paused, 3 at once, 100 per 1m" — what is set on a queue, for tables; "-" when nothing. */
export function describeLimits(queue: {
  paused: boolean;
  concurrency: number | null;
  rateLimit: RateLimit | null;
  keyLimits?: { concurrency: number | null; rateLimit: RateLimit | null } | null;
}): string {
  const parts: string[] = [];
  if (queue.paused) parts.push("paused");
  if (queue.concurrency !== null) parts.push(`${queue.concurrency} at once`);
  if (queue.rateLimit) parts.push(`${queue.rateLimit.count} per ${humanDuration(queue.rateLimit.intervalMs)}`);
  if (queue.keyLimits) {
    const perKey = [
      ...(queue.keyLimits.concurrency !== null ? [`${queue.keyLimits.concurrency} at once`] : []),
      ...(queue.keyLimits.rateLimit ? [`${queue.keyLimits.rateLimit.count} per ${humanDuration(queue.keyLimits.rateLimit.intervalMs)}`] : []),
    ];
    parts.push(`per key: ${perKey.length > 0 ? perKey.join(", ") : "overrides only"}`);
  }
  return parts.length > 0 ? parts.join(", ") : "-";
}

function summary(settings: QueueSettings): string {
  return `queue ${settings.queue}: ${describeLimits(settings)}\n`;
}

/** `conveyor queues pause|resume|limit|delete`: change a queue's settings (the library's queues.pause, queues.resume, queues.setLimits, queues.deleteSettings). */
export function registerQueueSettings(queues: Command): void {
  // --schema and --json belong to `conveyor queues` (commander hands options
  // the parent knows to the parent, wherever they stand), so read them from there.
  const common = (command: Command) => command.configureHelp({ showGlobalOptions: true });
  const globals = (command: Command) => command.optsWithGlobals() as { schema: string; json: boolean };
  const run = (schema: string, json: boolean, change: (session: Parameters<Parameters<typeof withSession>[1]>[0]) => Promise<QueueSettings>) =>
    withSession({ schema, poolSize: 2, quiet: true }, async (session) => {
      const settings = await change(session);
      if (json) {
        return printJson({
          queue: settings.queue,
          paused: settings.paused,
          concurrency: settings.concurrency,
          rateLimit: settings.rateLimit,
          updatedAt: settings.updatedAt.toISOString(),
        });
      }
      process.stdout.write(summary(settings));
    });

  common(queues.command("pause").description("stop workers from claiming a queue's jobs (running ones finish)").argument("<queue>", "queue name")).action(
    (queue: string, _options: object, command: Command) => {
      const { schema, json } = globals(command);
      return run(schema, json, ({ conveyor }) => conveyor.queues.pause(queue));
    },
  );

  common(queues.command("resume").description("let workers claim a paused queue again (wakes them at once)").argument("<queue>", "queue name")).action(
    (queue: string, _options: object, command: Command) => {
      const { schema, json } = globals(command);
      return run(schema, json, ({ conveyor }) => conveyor.queues.resume(queue));
    },
  );

  common(
    queues
      .command("delete")
      .description("delete a queue's settings: resume it and lift its limits (its jobs stay); undoes pause/limit on a mistyped name")
      .argument("<queue>", "queue name"),
  ).action((queue: string, _options: object, command: Command) => {
    const { schema, json } = globals(command);
    return withSession({ schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
      await conveyor.queues.deleteSettings(queue);
      if (json) return printJson({ queue, deleted: true });
      process.stdout.write(`queue ${queue}: settings deleted\n`);
    });
  });

  common(
    queues
      .command("limit")
      .description("limit a queue across all workers: jobs running at once and claims per interval")
      .argument("<queue>", "queue name")
      .option("--concurrency <n>", 'most jobs running at once, or "none"', concurrencyArg)
      .option("--rate <count/ms>", 'at most <count> starts per <ms> window (e.g. 100/60000), or "none"', rateArg),
  ).action((queue: string, options: { concurrency?: number | "none"; rate?: RateLimit | "none" }, command: Command) => {
    const { schema, json } = globals(command);
    if (options.concurrency === undefined && options.rate === undefined) {
      throw new ValidationError('give --concurrency and/or --rate ("none" removes a limit)');
    }
    const none = <T>(value: T | "none"): T | null => (value === "none" ? null : value);
    return run(schema, json, ({ conveyor }) =>
      conveyor.queues.setLimits(queue, {
        ...(options.concurrency !== undefined ? { concurrency: none(options.concurrency) } : {}),
        ...(options.rate !== undefined ? { rateLimit: none(options.rate) } : {}),
      }),
    );
  });
}
