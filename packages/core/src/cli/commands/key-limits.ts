import { type Command, InvalidArgumentError } from "commander";
import { DEFAULT_TOP_KEYS, MAX_TOP_KEYS } from "../../core/defaults.js";
import type { KeyLimits, KeyLimitSettings, KeyLimitsInput } from "../../core/key-limits.js";
import type { RateLimit } from "../../core/queue-settings.js";
import { ValidationError } from "../../core/errors.js";
import { keyLimitSettingsJson, keyLoadJson, keyStatusJson } from "../../wire/key-limits-json.js";
import { withDefault } from "../help-text.js";
import { type Session, withSession } from "../session.js";
import { formatFacts, formatTable, humanDuration, isoOrDash, printJson } from "../table.js";
import { concurrencyArg, rateArg } from "./queue-settings.js";

/** `--throttle`: a whole number of ms >= 1, or "none" to remove the rate limit. */
function throttleArg(value: string): number | "none" {
  if (value === "none") return "none";
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError(`expected a whole number of ms >= 1 or "none", got "${value}"`);
  return Number(value);
}

/** "5 at once, 100 per 1 min" — a key's limits, for tables; "-" when none. */
export function describeKeyLimits(limits: KeyLimits): string {
  const parts: string[] = [];
  if (limits.concurrency !== null) parts.push(`${limits.concurrency} at once`);
  if (limits.rateLimit) {
    parts.push(limits.rateLimit.count === 1 ? `1 per ${humanDuration(limits.rateLimit.intervalMs)}` : `${limits.rateLimit.count} per ${humanDuration(limits.rateLimit.intervalMs)}`);
  }
  return parts.length > 0 ? parts.join(", ") : "-";
}

function summary(settings: KeyLimitSettings): string {
  const who = settings.key === null ? "every key" : `key ${settings.key}`;
  return `queue ${settings.queue}, ${who}: ${describeKeyLimits(settings)}\n`;
}

/**
 * `conveyor queues key-limit|key-limit-delete|key-limits|keys|key`: limits
 * per key (the library's keyLimits.set, keyLimits.delete, keyLimits.list,
 * keyLimits.top, keyLimits.status).
 */
export function registerKeyLimits(queues: Command): void {
  const common = (command: Command) => command.configureHelp({ showGlobalOptions: true });
  const globals = (command: Command) => command.optsWithGlobals() as { schema: string; json: boolean };
  const session = (schema: string, body: (session: Session) => Promise<void>): Promise<void> =>
    withSession({ schema, poolSize: 2, quiet: true }, body);

  common(
    queues
      .command("key-limit")
      .description("limit each key of a queue (or, with --key, one key): jobs of one key running at once, starts per window, a throttle")
      .argument("<queue>", "queue name")
      .option("--key <key>", "override one key's limits (default: the queue's default for every key)")
      .option("--concurrency <n>", 'most jobs of one key running at once, or "none"', concurrencyArg)
      .option("--rate <count/ms>", 'at most <count> starts per key per <ms> window (e.g. 100/60000), or "none"', rateArg)
      .option("--throttle <ms>", 'at most one start per key per <ms>, or "none"', throttleArg),
  ).action(
    (queue: string, options: { key?: string; concurrency?: number | "none"; rate?: RateLimit | "none"; throttle?: number | "none" }, command: Command) => {
      const { schema, json } = globals(command);
      if (options.concurrency === undefined && options.rate === undefined && options.throttle === undefined) {
        throw new ValidationError('give --concurrency, --rate and/or --throttle ("none" removes a limit)');
      }
      const none = <T>(value: T | "none"): T | null => (value === "none" ? null : value);
      const limits: KeyLimitsInput = {
        ...(options.concurrency !== undefined ? { concurrency: none(options.concurrency) } : {}),
        ...(options.rate !== undefined ? { rateLimit: none(options.rate) } : {}),
        ...(options.throttle !== undefined ? { throttleMs: none(options.throttle) } : {}),
      };
      return session(schema, async ({ conveyor }) => {
        const settings = await conveyor.keyLimits.set(queue, limits, options.key === undefined ? {} : { key: options.key });
        if (json) return printJson(keyLimitSettingsJson(settings));
        process.stdout.write(summary(settings));
      });
    },
  );

  common(
    queues
      .command("key-limit-delete")
      .description("delete every key limit of a queue, or with --key one key's override (its jobs stay)")
      .argument("<queue>", "queue name")
      .option("--key <key>", "delete only this key's override"),
  ).action((queue: string, options: { key?: string }, command: Command) => {
    const { schema, json } = globals(command);
    return session(schema, async ({ conveyor }) => {
      const deleted = await conveyor.keyLimits.delete(queue, options.key === undefined ? {} : { key: options.key });
      if (json) return printJson({ queue, key: options.key ?? null, deleted });
      if (options.key !== undefined) process.stdout.write(`queue ${queue}, key ${options.key}: override deleted\n`);
      else process.stdout.write(deleted ? `queue ${queue}: key limits deleted\n` : `queue ${queue} had no key limits: nothing to delete\n`);
    });
  });

  common(queues.command("key-limits").description("a queue's key limits: its default for every key, then its overrides").argument("<queue>", "queue name")).action(
    (queue: string, _options: object, command: Command) => {
      const { schema, json } = globals(command);
      return session(schema, async ({ conveyor }) => {
        const items = await conveyor.keyLimits.list(queue);
        if (json) return printJson({ items: items.map(keyLimitSettingsJson) });
        if (items.length === 0) return void process.stdout.write(`queue ${queue} has no key limits\n`);
        process.stdout.write(formatTable(["KEY", "LIMITS"], items.map((item) => [item.key ?? "(every key)", describeKeyLimits(item)])));
      });
    },
  );

  common(
    queues
      .command("keys")
      .description("the keys of a queue with the most jobs waiting, with their running jobs and limits")
      .argument("<queue>", "queue name")
      .option("--limit <n>", withDefault(`how many keys (1-${MAX_TOP_KEYS})`, DEFAULT_TOP_KEYS), (value: string) => {
        if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected a whole number from 1 to ${MAX_TOP_KEYS}, got "${value}"`);
        return Number(value);
      }),
  ).action((queue: string, options: { limit?: number }, command: Command) => {
    const { schema, json } = globals(command);
    return session(schema, async ({ conveyor }) => {
      const items = await conveyor.keyLimits.top(queue, options.limit);
      if (json) return printJson({ items: items.map(keyLoadJson) });
      if (items.length === 0) return void process.stdout.write(`no job with a limit key waits in queue ${queue}\n`);
      process.stdout.write(
        formatTable(
          ["KEY", "WAITING", "RUNNING", "LIMITS", "FROM"],
          items.map((item) => [item.key, String(item.waiting), String(item.running), describeKeyLimits(item.limits), item.source]),
        ),
      );
    });
  });

  common(
    queues.command("key").description("what one key of a queue is doing, and why its waiting jobs are not running").argument("<queue>", "queue name").argument("<key>", "limit key"),
  ).action((queue: string, key: string, _options: object, command: Command) => {
    const { schema, json } = globals(command);
    return session(schema, async ({ conveyor }) => {
      const status = await conveyor.keyLimits.status(queue, key);
      if (json) return printJson(keyStatusJson(status));
      process.stdout.write(
        formatFacts([
          ["queue", queue],
          ["key", key],
          ["state", status.state],
          ["why", status.reason],
          ["limits", `${describeKeyLimits(status.limits)} (${status.source})`],
          ["running", String(status.running)],
          ["ready", String(status.ready)],
          ["scheduled", String(status.scheduled)],
          ["window", status.window === null ? "-" : `${status.window.count} started, closes ${isoOrDash(status.window.endsAt)}`],
        ]),
      );
    });
  });
}
