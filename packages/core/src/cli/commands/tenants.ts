import type { Command } from "commander";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import type { TenantSettings } from "../../core/queue-settings.js";
import { withSession } from "../session.js";
import { formatTable, printJson } from "../table.js";
import { concurrencyArg } from "./queue-settings.js";

/** The HTTP API's JSON for a tenant's settings, so `--json` reads the same everywhere. */
function tenantJson(settings: TenantSettings) {
  return { tenant: settings.tenant, concurrency: settings.concurrency, updatedAt: settings.updatedAt.toISOString() };
}

function capOf(settings: TenantSettings): string {
  return settings.concurrency === null ? "no cap" : `${settings.concurrency} at once`;
}

/** `conveyor tenants` and `conveyor tenants limit`: per-tenant concurrency caps (the library's queues.setTenantLimits). */
export function registerTenants(program: Command): void {
  const tenants = program
    .command("tenants")
    .description("tenants with a concurrency cap across all workers")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--json", "print JSON", false)
    .action(async (options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const items = await conveyor.queues.listTenantSettings();
        if (options.json) return printJson({ items: items.map(tenantJson) });
        if (items.length === 0) {
          process.stdout.write("no tenant settings (every tenant is uncapped)\n");
          return;
        }
        process.stdout.write(formatTable(["TENANT", "CAP"], items.map((settings) => [settings.tenant, capOf(settings)])));
      });
    });

  // --schema and --json belong to `conveyor tenants`, as for `conveyor queues limit`.
  tenants
    .command("limit")
    .description("cap a tenant's jobs running at once across all workers")
    .argument("<tenant>", "tenant name")
    .requiredOption("--concurrency <n>", 'most of its jobs running at once, or "none" to remove the cap', concurrencyArg)
    .configureHelp({ showGlobalOptions: true })
    .action(async (tenant: string, options: { concurrency: number | "none" }, command: Command) => {
      const { schema, json } = command.optsWithGlobals() as { schema: string; json: boolean };
      await withSession({ schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const settings = await conveyor.queues.setTenantLimits(tenant, { concurrency: options.concurrency === "none" ? null : options.concurrency });
        if (json) return printJson(tenantJson(settings));
        process.stdout.write(`tenant ${settings.tenant}: ${capOf(settings)}\n`);
      });
    });
}
