import { type Command, Option } from "commander";
import { DEFAULT_LIST_LIMIT, DEFAULT_SCHEMA, MAX_LIST_LIMIT } from "../../core/defaults.js";
import { NotFoundError } from "../../core/errors.js";
import { JOB_STATUSES } from "../../core/states.js";
import { type FlowDetailJson, flowDetailJson, flowSummaryJson } from "../../wire/flow-json.js";
import { flowLevels } from "../../wire/flow-levels.js";
import { listLimit, uuid } from "../arguments.js";
import { withSession } from "../session.js";
import { formatFacts, formatTable, isoOrDash, printJson } from "../table.js";

const schemaOption = () => new Option("--schema <name>", "schema holding Conveyor's tables").default(DEFAULT_SCHEMA);
const jsonOption = () => new Option("--json", "print the HTTP API's JSON for the same request").default(false);

/** `conveyor flows list|show|cancel`: flows and batches, straight from the database. */
export function registerFlows(program: Command): void {
  const flows = program.command("flows").description("list, show and cancel flows and batches (straight from the database)");

  flows
    .command("list")
    .description("flows and batches, newest first (one page; --cursor for the next)")
    .addOption(new Option("--kind <kind>", "only flows, or only batches").choices(["flow", "batch"]))
    .option("--tenant <tenant>", "only this tenant's (default: every tenant)")
    .option("--limit <n>", `page size, 1-${MAX_LIST_LIMIT}`, listLimit, DEFAULT_LIST_LIMIT)
    .option("--cursor <cursor>", "the next page, as printed after the previous one")
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (options: { kind?: "flow" | "batch"; tenant?: string; limit: number; cursor?: string; schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const page = await conveyor.flows.list({ kind: options.kind, tenant: options.tenant ?? null, limit: options.limit, cursor: options.cursor });
        if (options.json) return printJson({ items: page.items.map(flowSummaryJson), nextCursor: page.nextCursor });
        if (page.items.length === 0) {
          process.stdout.write("no flows\n");
          return;
        }
        process.stdout.write(
          formatTable(
            ["ID", "KIND", "NAME", "TENANT", "CREATED"],
            page.items.map((flow) => [flow.id, flow.kind, flow.name ?? "-", flow.tenant, isoOrDash(flow.createdAt)]),
          ),
        );
        if (page.nextCursor) process.stdout.write(`more: --cursor ${page.nextCursor}\n`);
      });
    });

  flows
    .command("show")
    .description("one flow or batch: its jobs level by level, each with its status and what it waits for")
    .argument("<id>", "flow id", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const flow = await conveyor.flows.get(id);
        if (!flow) throw new NotFoundError(`flow ${id} not found`);
        const json = flowDetailJson(flow);
        if (options.json) return printJson(json);
        process.stdout.write(showFlow(json));
      });
    });

  flows
    .command("cancel")
    .description("cancel a flow or batch: jobs not started are cancelled at once, running ones told at once")
    .argument("<id>", "flow id", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const done = await conveyor.flows.cancel(id);
        if (options.json) return printJson({ id, ...done });
        process.stdout.write(
          `cancelled ${done.cancelled} job${done.cancelled === 1 ? "" : "s"} of flow ${id}` +
            (done.cancelRequested > 0 ? `; ${done.cancelRequested} running, their handlers told to stop` : "") +
            "\n",
        );
      });
    });
}

/** A flow's facts, its counts, then its jobs level by level (level 0 waits on nothing in the flow). */
function showFlow(flow: FlowDetailJson): string {
  const counts = JOB_STATUSES.filter((status) => flow.counts[status] > 0).map((status) => `${flow.counts[status]} ${status}`);
  let text = formatFacts([
    ["id", flow.id],
    ["kind", flow.kind],
    ["name", flow.name ?? "-"],
    ["tenant", flow.tenant],
    ["created", isoOrDash(flow.createdAt)],
    ["idempotency key", flow.idempotencyKey ?? "-"],
    ...(flow.callbackJobId ? ([["callback job", flow.callbackJobId]] as Array<[string, string]>) : []),
    ["jobs", counts.length === 0 ? "none" : counts.join(", ")],
  ]);
  const levels = flowLevels(flow.jobs);
  const ordered = [...flow.jobs].sort((a, b) => levels.get(a.node)! - levels.get(b.node)! || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  text += "\n";
  text += formatTable(
    ["LEVEL", "NODE", "STATUS", "KIND", "JOB", "WAITS FOR"],
    ordered.map((entry) => [
      String(levels.get(entry.node)),
      entry.node,
      entry.job.status,
      entry.job.kind,
      entry.job.id,
      entry.dependsOn.length === 0 ? "-" : entry.dependsOn.map((dep) => dep.node ?? dep.jobId).join(", "),
    ]),
  );
  return text;
}
