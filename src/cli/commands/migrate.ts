import type { Command } from "commander";
import { Conveyor } from "../../client/conveyor.js";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import { openDatabase } from "../database.js";
import { cliLogger } from "../logger.js";

export function registerMigrate(program: Command): void {
  program
    .command("migrate")
    .description("apply pending schema migrations (safe to run from many processes at once)")
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .action(async (options: { schema: string }) => {
      const log = cliLogger();
      const database = await openDatabase(log);
      const conveyor = new Conveyor({ connectionString: database.connectionString, schema: options.schema, logger: log, poolSize: 2 });
      try {
        const result = await conveyor.migrate();
        process.stdout.write(
          result.applied.length > 0
            ? `applied migrations ${result.applied.join(", ")}; schema "${options.schema}" is at version ${result.version}\n`
            : `schema "${options.schema}" is up to date at version ${result.version}\n`,
        );
      } finally {
        await conveyor.close();
        await database.close();
      }
    });
}
