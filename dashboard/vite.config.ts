import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The dashboard: Preact + TypeScript, built into dist/dashboard, which the
// API serves at "/" (src/http/dashboard.ts). `npm run build` runs this.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("../dist/dashboard", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // One small entry chunk: the whole app is a few dozen KB.
    chunkSizeWarningLimit: 200,
  },
});
