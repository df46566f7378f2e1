import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The dashboard: Preact + TypeScript, built into dist/dashboard, which the
// API serves at "/" (src/http/dashboard.ts). `npm run build` runs this.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  // `npx vite --config dashboard/vite.config.ts`: hot reload against a running API
  // (`conveyor dev` or `conveyor api`; CONVEYOR_API_URL, default http://127.0.0.1:8080).
  server: {
    proxy: Object.fromEntries(
      ["/v1", "/openapi.json"].map((path) => [path, process.env.CONVEYOR_API_URL ?? "http://127.0.0.1:8080"]),
    ),
  },
  build: {
    outDir: fileURLToPath(new URL("../dist/dashboard", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // One small entry chunk: the whole app is a few dozen KB.
    chunkSizeWarningLimit: 200,
  },
});
