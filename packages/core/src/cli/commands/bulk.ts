import { hostname, userInfo } from "node:os";
import { type Command, CommanderError, Option } from "commander";
import type { Conveyor } from "../../conveyor.js";
import type { BulkAction, BulkActionKind } from "../../core/bulk-actions.js";
import { DEFAULT_LIST_LIMIT, DEFAULT_SCHEMA, MAX_LIST_LIMIT, MAX_PRIORITY, MIN_PRIORITY } from "../../core/defaults.js";
import { ConfigError, NotFoundError } from "../../core/errors.js";
import { bulkActionJson } from "../../wire/bulk-action-json.js";
import { listLimit, priority, uuid } from "../arguments.js";
import { addJobFilterOptions, type JobFilterFlags, jobFilterOf } from "../job-filter-options.js";
import { positiveInt } from "../parse.js";
import { ProgressBar } from "../progress.js";
import { withSession } from "../session.js";
import { formatFacts, formatTable, isoOrDash, printJson } from "../table.js";

const schemaOption = () => new Option("--schema <name>", "schema holding Conveyor's tables").default(DEFAULT_SCHEMA);
const jsonOption = () => new Option("--json", "print the HTTP API's JSON for the operation").default(false);

/** The exit code of an operation stopped with Ctrl-C (128 + SIGINT), as shells report an interrupted command. */
const INTERRUPTED_EXIT_CODE = 130;

interface ActionFlags extends JobFilterFlags {
  all: boolean;
  schema: string;
  json: boolean;
  batchSize?: number;
}

/** What each action did, for the last line. */
const DONE: Record<BulkActionKind, string> = {
  retry: "retried",
  cancel: "cancelled",
  purge: "purged",
  set_priority: "reprioritized",
  move: "moved",
};

/** Who asked, for the operation's record: `cli:<os user>@<host>`. */
function requestedBy(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER ?? "unknown"; // no passwd entry for this uid (some containers)
  }
  return `cli:${user}@${hostname()}`.slice(0, 256);
}

/** The options every action command takes: the filter, --all, and how to print. */
function actionCommand(command: Command): Command {
  return addJobFilterOptions(command)
    .option("--all", "act on every job when no filter option is given (refused otherwise)", false)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .addOption(new Option("--batch-size <n>", "jobs per batch").argParser(positiveInt).hideHelp());
}

/**
 * Start an operation, show its progress on stderr (a bar on a terminal,
 * a line per tenth otherwise) and run it here to its end. Ctrl-C cancels it
 * between two batches (a second Ctrl-C exits at once; the operation stays
 * running, for the API's sweep or `bulkActions.run` to resume).
 */
async function runAction(action: BulkActionKind, flags: ActionFlags, extra: { priority?: number; queue?: string }): Promise<void> {
  const filter = jobFilterOf(flags);
  if (Object.keys(filter).every((field) => field === "tenant") && !flags.all) {
    throw new ConfigError("the filter is empty, so it covers every job: give filter options (--status, --kind, --queue, …), or --all to mean it");
  }
  await withSession({ schema: flags.schema, poolSize: 3, quiet: true }, async ({ conveyor }) => {
    if (flags.batchSize !== undefined) conveyor.bulkActions.tuning.batchSize = flags.batchSize;
    const started = await conveyor.bulkActions.start({ action, filter, ...extra, all: flags.all, requestedBy: requestedBy() });
    const total = started.total ?? 0;
    process.stderr.write(
      `bulk ${action}: the filter covers ${total.toLocaleString("en-US")} job${total === 1 ? "" : "s"} (an estimate on large tables); ` +
        `operation ${started.id}; Ctrl-C stops it\n`,
    );
    const ended = await runWithProgress(conveyor, started);
    if (flags.json) printJson(bulkActionJson(ended));
    const touched = `${ended.touched.toLocaleString("en-US")} job${ended.touched === 1 ? "" : "s"}`;
    switch (ended.status) {
      case "succeeded":
        if (!flags.json) process.stdout.write(`${DONE[action]} ${touched} (operation ${ended.id})\n`);
        return;
      case "cancelled":
        process.stderr.write(`bulk ${action} cancelled: ${DONE[action]} ${touched} before it stopped (operation ${ended.id})\n`);
        throw new CommanderError(INTERRUPTED_EXIT_CODE, "conveyor.bulk.cancelled", "cancelled");
      case "failed":
        throw new Error(`bulk ${action} failed after ${touched} (operation ${ended.id}): ${ended.error}`);
      case "running":
        throw new Error(`bulk ${action} stopped before its end after ${touched}; it resumes from there (operation ${ended.id})`);
    }
  });
}

async function runWithProgress(conveyor: Conveyor, started: BulkAction): Promise<BulkAction> {
  const bar = new ProgressBar(`bulk ${started.action}`, started.total);
  let interrupts = 0;
  const onInterrupt = () => {
    interrupts += 1;
    if (interrupts > 1) process.exit(INTERRUPTED_EXIT_CODE);
    bar.abandon();
    process.stderr.write("stopping after the batch in progress (Ctrl-C again exits at once)\n");
    conveyor.bulkActions.cancel(started.id).catch(() => {}); // already ended: nothing to stop
  };
  process.on("SIGINT", onInterrupt);
  try {
    const ended = await conveyor.bulkActions.run(started.id, { onProgress: (operation) => bar.update(operation.touched, operation.touched) });
    bar.finish(ended.touched, ended.touched);
    return ended;
  } catch (error) {
    bar.abandon();
    throw error;
  } finally {
    process.off("SIGINT", onInterrupt);
  }
}

function showOperation(operation: BulkAction): string {
  return formatFacts([
    ["id", operation.id],
    ["action", operation.action],
    ...(operation.priority !== null ? [["priority", String(operation.priority)] as const] : []),
    ...(operation.queue !== null ? [["queue", operation.queue] as const] : []),
    ["status", operation.cancelRequested && operation.status === "running" ? "running (cancel requested)" : operation.status],
    ["tenant", operation.tenant ?? "every tenant"],
    ["filter", JSON.stringify(operation.filter)],
    ["requested by", operation.requestedBy ?? "-"],
    ["touched", operation.touched.toLocaleString("en-US")],
    ["total", operation.total === null ? "-" : `${operation.total.toLocaleString("en-US")} (when it started)`],
    ["created", isoOrDash(operation.createdAt)],
    ["updated", isoOrDash(operation.updatedAt)],
    ["finished", isoOrDash(operation.finishedAt)],
    ...(operation.error !== null ? [["error", operation.error] as const] : []),
  ]);
}

/**
 * `conveyor bulk retry|cancel|purge|set-priority|move [filter options]`:
 * act on every job a filter selects, in batches on the server, with
 * progress; `conveyor bulk list|show|cancel <id>`: the operations.
 */
export function registerBulk(program: Command): void {
  const bulk = program
    .command("bulk")
    .description("act on every job a filter selects (retry, cancel, purge, set-priority, move) in batches; list, show and cancel the operations");

  actionCommand(bulk.command("retry").description("requeue dead jobs with fresh attempts, and run retrying jobs now")).action((flags: ActionFlags) =>
    runAction("retry", flags, {}),
  );

  actionCommand(
    bulk
      .command("cancel")
      .description(
        "cancel the jobs the filter selects (waiting, queued and retrying at once; running ones asked to stop); " +
          "with an operation id instead, stop that operation",
      )
      .argument("[id]", "a bulk action operation to stop (from bulk list), instead of a filter", uuid),
  ).action(async (id: string | undefined, flags: ActionFlags) => {
    if (id === undefined) return runAction("cancel", flags, {});
    if (Object.keys(jobFilterOf(flags)).length > 0 || flags.all) throw new ConfigError("give an operation id or filter options, not both");
    await withSession({ schema: flags.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
      const operation = await conveyor.bulkActions.cancel(id);
      if (flags.json) return printJson(bulkActionJson(operation));
      process.stdout.write(
        operation.status === "running"
          ? `cancellation requested for operation ${id}: it stops after the batch in progress (${operation.touched.toLocaleString("en-US")} jobs so far)\n`
          : `cancelled operation ${id} (no process was running it; ${operation.touched.toLocaleString("en-US")} jobs touched)\n`,
      );
    });
  });

  actionCommand(bulk.command("purge").description("delete finished jobs (succeeded, cancelled, dead) with their history; never unfinished ones")).action(
    (flags: ActionFlags) => runAction("purge", flags, {}),
  );

  actionCommand(
    bulk
      .command("set-priority")
      .description("give waiting, queued and retrying jobs a new priority (lower runs first)")
      .argument("<n>", `the priority, ${MIN_PRIORITY}..${MAX_PRIORITY}`, priority),
  ).action((n: number, flags: ActionFlags) => runAction("set_priority", flags, { priority: n }));

  actionCommand(
    bulk.command("move").description("move waiting, queued and retrying jobs to another queue").argument("<queue>", "the queue to move them to"),
  ).action((queue: string, flags: ActionFlags) => runAction("move", flags, { queue }));

  bulk
    .command("list")
    .description("bulk action operations, newest first (one page; --cursor for the next)")
    .option("--tenant <tenant>", "only this tenant's operations (default: every tenant's)")
    .option("--limit <n>", `page size, 1-${MAX_LIST_LIMIT}`, listLimit, DEFAULT_LIST_LIMIT)
    .option("--cursor <cursor>", "the next page, as printed after the previous one")
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (options: { tenant?: string; limit: number; cursor?: string; schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const page = await conveyor.bulkActions.list({ tenant: options.tenant ?? null, limit: options.limit, cursor: options.cursor });
        if (options.json) return printJson({ items: page.items.map(bulkActionJson), nextCursor: page.nextCursor });
        if (page.items.length === 0) {
          process.stdout.write("no bulk actions\n");
          return;
        }
        process.stdout.write(
          formatTable(
            ["ID", "ACTION", "STATUS", "TOUCHED", "TOTAL", "TENANT", "REQUESTED BY", "CREATED"],
            page.items.map((operation) => [
              operation.id,
              operation.action,
              operation.status,
              operation.touched.toLocaleString("en-US"),
              operation.total === null ? "-" : operation.total.toLocaleString("en-US"),
              operation.tenant ?? "*",
              operation.requestedBy ?? "-",
              isoOrDash(operation.createdAt),
            ]),
          ),
        );
        if (page.nextCursor) process.stdout.write(`more: --cursor ${page.nextCursor}\n`);
      });
    });

  bulk
    .command("show")
    .description("one operation: what was asked, by whom, and how far it got")
    .argument("<id>", "operation id (from bulk list)", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const operation = await conveyor.bulkActions.get(id);
        if (!operation) throw new NotFoundError(`bulk action ${id} not found`);
        if (options.json) return printJson(bulkActionJson(operation));
        process.stdout.write(showOperation(operation));
      });
    });
}
