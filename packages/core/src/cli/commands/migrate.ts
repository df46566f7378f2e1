import type { Command } from "commander";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import { withSession } from "../session.js";

export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("apply pending schema migrations (safe to run from many processes at once)")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .action(async (options: { schema: string }) => {
      await withSession({ schema: options.schema, migrate: false, poolSize: 2 }, async ({ conveyor }) => {
        const result = await conveyor.migrate();
        process.stdout.write(
          result.applied.length > 0
            ? `applied migrations ${result.applied.join(", ")}; schema "${options.schema}" is at version ${result.version}\n`
            : `schema "${options.schema}" is up to date at version ${result.version}\n`,
        );
      });
    });
}
