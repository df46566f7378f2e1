import type { Command, Option } from "commander";
import { describe, expect, it } from "vitest";
import { bytesText } from "../../packages/core/src/cli/help-text.js";
import { createProgram } from "../../packages/core/src/cli/program.js";
import {
  DEFAULT_API_HOST,
  DEFAULT_API_PORT,
  DEFAULT_CLAIM_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_DEV_CONCURRENCY,
  DEFAULT_FAIRNESS,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_HTTP_BODY_LIMIT_BYTES,
  DEFAULT_HTTP_REQUEST_TIMEOUT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_LIST_LIMIT,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_PROGRESS_INTERVAL_MS,
  DEFAULT_RECLAIM_INTERVAL_MS,
  DEFAULT_RETENTION_BATCH_SIZE,
  DEFAULT_RETENTION_DEAD_LETTER_MS,
  DEFAULT_EVENT_RETENTION_MS,
  DEFAULT_RETENTION_FINISHED_MS,
  DEFAULT_SCHEMA,
  DEFAULT_SHUTDOWN_GRACE_MS,
  DEFAULT_TENANT,
  DEFAULT_TOP_KEYS,
} from "../../packages/core/src/core/defaults.js";
import { formatDuration } from "../../packages/core/src/core/duration.js";

/**
 * Every default a command's help states comes from src/core/defaults.ts:
 * each option below shows its constant's value, so changing a constant
 * changes the help, and an option that states a value this table does not
 * know (a number typed into its description) fails the test.
 */

/** What `(default: …)` shows, by "command path + flag", or by flag alone for options every command shares. */
const EXPECTED: Record<string, string> = {
  "--schema": JSON.stringify(DEFAULT_SCHEMA),
  "worker --concurrency": String(DEFAULT_CONCURRENCY),
  "worker --lease-ms": String(DEFAULT_LEASE_MS),
  "worker --heartbeat-ms": `${DEFAULT_HEARTBEAT_MS}, or a third of the lease when less`,
  "worker --poll-interval-ms": String(DEFAULT_POLL_INTERVAL_MS),
  "worker --reclaim-interval-ms": String(DEFAULT_RECLAIM_INTERVAL_MS),
  "worker --shutdown-grace-ms": String(DEFAULT_SHUTDOWN_GRACE_MS),
  "worker --claim-batch-size": String(DEFAULT_CLAIM_BATCH_SIZE),
  "worker --progress-interval-ms": String(DEFAULT_PROGRESS_INTERVAL_MS),
  "worker --fairness": DEFAULT_FAIRNESS,
  "worker --retain-finished": formatDuration(DEFAULT_RETENTION_FINISHED_MS),
  "worker --retain-dead": formatDuration(DEFAULT_RETENTION_DEAD_LETTER_MS),
  "dev --port": String(DEFAULT_API_PORT),
  "dev --host": JSON.stringify(DEFAULT_API_HOST),
  "dev --concurrency": String(DEFAULT_DEV_CONCURRENCY),
  "api --port": String(DEFAULT_API_PORT),
  "api --host": JSON.stringify(DEFAULT_API_HOST),
  "api --body-limit": bytesText(DEFAULT_HTTP_BODY_LIMIT_BYTES),
  "api --request-timeout-ms": String(DEFAULT_HTTP_REQUEST_TIMEOUT_MS),
  "keys create --tenant": JSON.stringify(DEFAULT_TENANT),
  "jobs enqueue --tenant": JSON.stringify(DEFAULT_TENANT),
  "events send --tenant": JSON.stringify(DEFAULT_TENANT),
  "jobs list --limit": String(DEFAULT_LIST_LIMIT),
  "flows list --limit": String(DEFAULT_LIST_LIMIT),
  "dlq list --limit": String(DEFAULT_LIST_LIMIT),
  "bulk list --limit": String(DEFAULT_LIST_LIMIT),
  "queues keys --limit": String(DEFAULT_TOP_KEYS),
  "prune --finished-older-than": formatDuration(DEFAULT_RETENTION_FINISHED_MS),
  "prune --dead-older-than": formatDuration(DEFAULT_RETENTION_DEAD_LETTER_MS),
  "prune --events-older-than": formatDuration(DEFAULT_EVENT_RETENTION_MS),
  "prune --batch-size": String(DEFAULT_RETENTION_BATCH_SIZE),
};

interface OptionHelp {
  key: string;
  flag: string;
  description: string;
  /** The whole help of its command, whitespace collapsed (the help wraps long lines). */
  commandHelp: string;
}

function commandsOf(command: Command, path: string[] = []): Array<{ path: string[]; command: Command }> {
  return [{ path, command }, ...command.commands.flatMap((sub) => commandsOf(sub, [...path, sub.name()]))];
}

const collapse = (text: string) => text.replace(/\s+/g, " ");

function optionHelps(): OptionHelp[] {
  return commandsOf(createProgram("0.0.0")).flatMap(({ path, command }) => {
    const help = command.createHelp();
    const commandHelp = collapse(command.helpInformation());
    return help.visibleOptions(command).map((option: Option) => ({
      key: [...path, option.long ?? option.flags].join(" "),
      flag: option.long ?? option.flags,
      description: help.optionDescription(option),
      commandHelp,
    }));
  });
}

/** The text of `(default: …)`, up to the closing parenthesis that matches it. */
function shownDefault(description: string): string | undefined {
  const start = description.indexOf("(default: ");
  if (start < 0) return undefined;
  let depth = 0;
  for (let i = start; i < description.length; i++) {
    if (description[i] === "(") depth++;
    if (description[i] === ")" && --depth === 0) return description.slice(start + "(default: ".length, i);
  }
  return undefined;
}

describe("CLI help", () => {
  const options = optionHelps();

  it("shows each option's default from src/core/defaults.ts", () => {
    const wrong: string[] = [];
    for (const [key, expected] of Object.entries(EXPECTED)) {
      const matching = key.startsWith("--") ? options.filter((option) => option.flag === key) : options.filter((option) => option.key === key);
      if (matching.length === 0) wrong.push(`${key}: no such option`);
      for (const option of matching) {
        const shown = shownDefault(option.description);
        if (shown !== expected) wrong.push(`${option.key}: shows ${JSON.stringify(shown)}, expected ${JSON.stringify(expected)}`);
        if (!option.commandHelp.includes(collapse(option.description))) wrong.push(`${option.key}: not in its command's --help`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("states a default only as (default: …), and one with a value only from the table above", () => {
    const unchecked: string[] = [];
    for (const option of options) {
      // "module whose default export is …" is not about the option's default.
      const text = option.description.replaceAll("default export", "");
      if (!/default/i.test(text)) continue;
      const shown = shownDefault(text);
      if (shown === undefined) {
        unchecked.push(`${option.key}: mentions a default outside "(default: …)": ${text}`);
        continue;
      }
      // Words ("every tenant", "the kind's", false) name no value that defaults.ts could hold.
      const isValue = /\d|"/.test(shown);
      if (isValue && !(option.key in EXPECTED) && !(option.flag in EXPECTED)) unchecked.push(`${option.key}: (default: ${shown}) is not checked`);
    }
    expect(unchecked).toEqual([]);
  });

  it("reads the help of every command, subcommands included", () => {
    const commands = new Set(options.map((option) => option.key.split(" --")[0]));
    expect([...commands]).toEqual(expect.arrayContaining(["worker", "api", "dev", "prune", "jobs enqueue", "queues keys", "bulk list"]));
  });
});
