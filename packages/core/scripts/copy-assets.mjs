// tsc compiles TypeScript only; migrations are .sql files read at run time.
import { chmodSync, cpSync, existsSync } from "node:fs";

cpSync("src/store/migrations", "dist/src/store/migrations", { recursive: true });
if (existsSync("dist/src/cli/main.js")) chmodSync("dist/src/cli/main.js", 0o755);
