import type { Command } from "commander";
import type { ApiKeyRecord, ApiKeys } from "../../client/api-keys.js";
import { DEFAULT_SCHEMA, DEFAULT_TENANT } from "../../core/defaults.js";
import { withSession } from "../session.js";
import { printJson } from "../table.js";

/** `conveyor keys create|list|revoke`: API keys for the HTTP API. */
export function registerKeys(program: Command): void {
  const keys = program.command("keys").description("API keys for the HTTP API (stored hashed; a key is shown once, at creation)");

  keys
    .command("create")
    .description("create an API key and print it (the only time it is shown)")
    .option("--tenant <tenant>", "tenant the key acts for", DEFAULT_TENANT)
    .option("--admin", "admin key: sees and changes every tenant", false)
    .option("--name <name>", "a label for people, e.g. the service using it")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--json", "print JSON instead of text", false)
    .action(async (options: { tenant: string; admin: boolean; name?: string; schema: string; json: boolean }) => {
      await withApiKeys(options.schema, async (apiKeys) => {
        const { key, record } = await apiKeys.create({ tenant: options.tenant, admin: options.admin, name: options.name });
        if (options.json) {
          process.stdout.write(`${JSON.stringify({ key, ...recordJson(record) })}\n`);
          return;
        }
        process.stdout.write(
          `${key}\n` +
            `id ${record.id}, tenant ${record.tenant}${record.admin ? ", admin" : ""}${record.name ? `, name ${record.name}` : ""}\n` +
            "store the key now: only its hash is kept, and it cannot be shown again\n",
        );
      });
    });

  keys
    .command("list")
    .description("list API keys (prefix, tenant, admin, created, last used, revoked)")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--json", 'print { "items": [...] } instead of a table, as every other list', false)
    .action(async (options: { schema: string; json: boolean }) => {
      await withApiKeys(options.schema, async (apiKeys) => {
        const records = await apiKeys.list();
        if (options.json) return printJson({ items: records.map(recordJson) });
        process.stdout.write(table(records));
      });
    });

  keys
    .command("revoke")
    .description("revoke an API key: it stops working on its next request")
    .argument("<id>", "the key's id (from keys list)")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .action(async (id: string, options: { schema: string }) => {
      await withApiKeys(options.schema, async (apiKeys) => {
        const record = await apiKeys.revoke(id);
        process.stdout.write(`revoked ${record.id} (${record.prefix}…, tenant ${record.tenant})\n`);
      });
    });
}

function withApiKeys(schema: string, work: (keys: ApiKeys) => Promise<void>): Promise<void> {
  // Migrating first makes sure the api_keys table exists; a no-op when current.
  // Quiet: stdout is the result (a key, a table, JSON), so logs go to stderr.
  return withSession({ schema, poolSize: 2, quiet: true }, ({ conveyor }) => work(conveyor.apiKeys));
}

function recordJson(record: ApiKeyRecord) {
  return {
    id: record.id,
    prefix: record.prefix,
    tenant: record.tenant,
    admin: record.admin,
    name: record.name,
    createdAt: record.createdAt.toISOString(),
    lastUsedAt: record.lastUsedAt?.toISOString() ?? null,
    revokedAt: record.revokedAt?.toISOString() ?? null,
  };
}

function table(records: ApiKeyRecord[]): string {
  if (records.length === 0) return "no API keys\n";
  const rows = [
    ["ID", "PREFIX", "TENANT", "ADMIN", "NAME", "CREATED", "LAST USED", "REVOKED"],
    ...records.map((record) => [
      record.id,
      `${record.prefix}…`,
      record.tenant,
      record.admin ? "yes" : "no",
      record.name ?? "",
      record.createdAt.toISOString(),
      record.lastUsedAt?.toISOString() ?? "never",
      record.revokedAt?.toISOString() ?? "",
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ").trimEnd()).join("\n") + "\n";
}
