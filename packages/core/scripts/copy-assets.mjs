// tsc compiles TypeScript only; migrations are .sql files read at run time.
// The package also ships the repository's README and guides, which npm shows
// and the README's links point at (they are not kept in this folder).
import { chmodSync, cpSync, existsSync, rmSync } from "node:fs";

cpSync("src/store/migrations", "dist/src/store/migrations", { recursive: true });
cpSync("../../README.md", "README.md");
rmSync("docs", { recursive: true, force: true });
cpSync("../../docs", "docs", { recursive: true, filter: (path) => !path.includes("/docs/api") });
if (existsSync("dist/src/cli/main.js")) chmodSync("dist/src/cli/main.js", 0o755);
