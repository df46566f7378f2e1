// Which part of Conveyor may import which, checked by `npm run depcheck`
// (part of `npm test`). The repository holds three packages:
//
//   packages/core       conveyor-jobs: client, workers, store, CLI, test helpers
//   packages/http       conveyor-jobs-http: the API and the dashboard
//   packages/embedded   conveyor-jobs-embedded: the embedded PostgreSQL server
//
// The other two import the core only through its entries: `conveyor-jobs`
// and `conveyor-jobs/server` (the dashboard, bundled for the browser,
// `conveyor-jobs/browser`), which tsconfig.json's paths resolve to
// src/index.ts, src/server.ts and src/browser.ts. Never the reverse: the
// core loads them only through `src/optional-packages.ts`, by a name it does
// not import.
//
// Inside the core, dependencies point one way, from the entry points down:
//
//   src/index.ts, src/cli          entry points (composition roots)
//   src/testing                    the `conveyor-jobs/testing` entry: helpers for users' tests
//   src/server.ts, src/browser.ts  the entries of the API and embedded packages, and of the dashboard
//   src/conveyor.ts                Conveyor = client + its workers
//   src/client   src/worker        side by side, never each other
//   src/wire  src/metrics  src/tracing   JSON the API and CLI speak; worker metrics; OpenTelemetry spans
//   src/store                      all SQL
//   src/core                       pure model and rules
//
// Type-only imports count: a cycle through types still ties modules
// together (the store's facade and its helpers did exactly that).

const { builtinModules } = require("node:module");

const CORE = "^packages/core/src/";

/** Node's built-in modules, as depcruise names them (`node:crypto` is `crypto`). */
const NODE_BUILTIN = `^(node:)?(${builtinModules.join("|")})$`;

/** Paths of the core's modules outside `dirs` (each a path under its src/, without a trailing slash). */
const outside = (...dirs) => `${CORE}(?!(?:${dirs.join("|")})(?:/|\\.ts$))`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-cycles",
      comment: "A cycle makes two modules one: neither can be read, tested or moved without the other.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "core-package-never-imports-the-others",
      comment: "conveyor-jobs installs without the API and the embedded server; it loads them only by name, in src/optional-packages.ts.",
      severity: "error",
      from: { path: "^packages/core/" },
      to: { path: "^packages/(http|embedded)/" },
    },
    {
      name: "core-imports-nothing-of-ours",
      comment: "core is the pure model (states, errors, ids, retry math, job definitions): everything may use it, it uses nothing.",
      severity: "error",
      from: { path: `${CORE}core/` },
      to: { path: outside("core") },
    },
    {
      name: "store-imports-only-core",
      comment: "The store is every statement Conveyor runs; it knows rows and SQL, not who calls it.",
      severity: "error",
      from: { path: `${CORE}store/` },
      to: { path: outside("store", "core") },
    },
    {
      name: "wire-imports-only-core",
      comment: "The JSON the API and the CLI share (shapes, strict parsing, the job to enqueue) sits below both, so neither imports the other for it.",
      severity: "error",
      from: { path: `${CORE}wire/` },
      to: { path: outside("wire", "core") },
    },
    {
      name: "metrics-imports-only-core",
      comment: "The worker's Prometheus metrics and their server are used by the worker and the CLI; they know nothing of either.",
      severity: "error",
      from: { path: `${CORE}metrics/` },
      to: { path: outside("metrics", "core") },
    },
    {
      name: "tracing-imports-only-core",
      comment: "OpenTelemetry spans for the client's enqueues and the worker's attempts; it knows neither, only core's job shapes.",
      severity: "error",
      from: { path: `${CORE}tracing/` },
      to: { path: outside("tracing", "core") },
    },
    {
      name: "testing-is-an-entry-point",
      comment: "The helpers of `conveyor-jobs/testing` compose a client and its workers as an application would; they never load the CLI.",
      severity: "error",
      from: { path: `${CORE}testing/` },
      to: { path: `${CORE}cli/` },
    },
    {
      name: "nothing-imports-the-testing-helpers",
      comment: "Test helpers are an entry of their own, for users' tests; the library never depends on them.",
      severity: "error",
      from: { path: "^packages/", pathNot: `${CORE}testing/` },
      to: { path: `${CORE}testing/` },
    },
    {
      name: "client-imports-store-and-core",
      comment: "The client knows nothing of workers, HTTP or the CLI; src/conveyor.ts composes it with workers.",
      severity: "error",
      from: { path: `${CORE}client/` },
      to: { path: outside("client", "store", "core", "tracing") },
    },
    {
      name: "worker-imports-store-core-metrics",
      comment: "A worker takes what it needs of a client as WorkerDeps, so it never imports the client (that was the client ⇄ worker cycle).",
      severity: "error",
      from: { path: `${CORE}worker/` },
      to: { path: outside("worker", "store", "core", "metrics", "tracing") },
    },
    {
      name: "only-entry-points-import-the-composition",
      comment: "src/conveyor.ts is the top of the library: the package entry, the CLI, the test helpers and the optional packages' contract use it; nothing under it may.",
      severity: "error",
      from: { path: "^packages/", pathNot: `${CORE}(index\\.ts|optional-packages\\.ts|cli/|testing/)` },
      to: { path: `${CORE}conveyor\\.ts$` },
    },
    {
      name: "nothing-imports-the-cli",
      comment: "The CLI is an entry point: it reads process.env and argv, which the library never does.",
      severity: "error",
      from: { path: "^packages/", pathNot: `${CORE}cli/` },
      to: { path: `${CORE}cli/` },
    },
    {
      name: "packages-import-the-core-by-its-entries",
      comment:
        "The API and the embedded server import the core only as `conveyor-jobs` and `conveyor-jobs/server`: what they use beyond the public entry is listed in src/server.ts, and the rest of the core stays private. A deep path (relative, into dist, or a subpath the package does not export) fails here.",
      severity: "error",
      from: { path: "^packages/(http|embedded)/", pathNot: "^packages/http/dashboard/" },
      to: { path: ["^packages/core/", "^conveyor-jobs/"], pathNot: `${CORE}(index|server)\\.ts$` },
    },
    {
      name: "server-entry-is-client-and-below",
      comment: "`conveyor-jobs/server` gives the API a client's parts and the JSON it speaks; no workers, no CLI, not the composition in src/conveyor.ts.",
      severity: "error",
      from: { path: `${CORE}server\\.ts$` },
      to: { path: outside("client", "store", "core", "wire", "optional-packages") },
    },
    {
      name: "http-never-imports-the-embedded-server",
      comment: "The API is built from a client; it knows nothing of the embedded server.",
      severity: "error",
      from: { path: "^packages/http/src/" },
      to: { path: "^packages/embedded/" },
    },
    {
      name: "embedded-never-imports-the-api",
      comment: "The embedded PostgreSQL server is a leaf: it knows Conveyor only for its errors and the contract the CLI loads it by, never the API.",
      severity: "error",
      from: { path: "^packages/embedded/src/" },
      to: { path: "^packages/http/" },
    },
    {
      name: "nothing-imports-the-dashboard",
      comment: "The dashboard is built separately and served as static files; the server never imports its code.",
      severity: "error",
      from: { path: "^packages/[^/]+/src/" },
      to: { path: "^packages/http/dashboard/" },
    },
    {
      name: "dashboard-imports-the-core-by-its-browser-entry",
      comment: "The dashboard runs in the browser: of the core it imports only `conveyor-jobs/browser`, never server code.",
      severity: "error",
      from: { path: "^packages/http/dashboard/" },
      to: { path: ["^packages/core/", "^conveyor-jobs(/|$)", "^packages/(http/src|embedded)/"], pathNot: `${CORE}browser\\.ts$` },
    },
    {
      name: "browser-entry-imports-only-wire-and-core",
      comment: "`conveyor-jobs/browser` holds constants and pure functions the dashboard shares with the API.",
      severity: "error",
      from: { path: `${CORE}browser\\.ts$` },
      to: { path: outside("wire", "core") },
    },
    {
      name: "browser-entry-reaches-no-package",
      comment: "The dashboard's bundle takes in all `conveyor-jobs/browser` reaches: no npm package and no Node built-in (node:crypto is stubbed in a browser).",
      severity: "error",
      from: { path: `${CORE}browser\\.ts$` },
      to: { reachable: true, path: ["(^|/)node_modules/", NODE_BUILTIN] },
    },
    {
      name: "each-package-declares-what-it-imports",
      comment: "A package imports only what its own package.json lists (or Node's built-ins): a dependency of a sibling is not installed with it.",
      severity: "error",
      from: { path: "^packages/[^/]+/(src|dashboard)/", pathNot: "\\.test\\.ts$" },
      to: { dependencyTypes: ["npm-no-pkg", "npm-unknown"] },
    },
    {
      name: "library-uses-no-dev-dependencies",
      comment:
        "What ships under dist/src must run with the package's dependencies alone (unit tests beside the code may use vitest). The core's optional peers are also devDependencies of the repository, for its build and tests: @opentelemetry/api, which src/tracing imports dynamically and runs without, and zod, which the HTTP package lists as its own dependency (a dependency of the package that is also a devDependency of the repository is fine).",
      severity: "error",
      from: { path: "^packages/[^/]+/src/", pathNot: "\\.test\\.ts$" },
      to: { dependencyTypes: ["npm-dev"], dependencyTypesNot: ["type-only", "npm-peer", "npm"] },
    },
  ],
  options: {
    doNotFollow: { path: ["node_modules", "dist"] },
    tsPreCompilationDeps: true,
    // Its paths resolve the package names to their sources, so the rules above see the modules imported.
    tsConfig: { fileName: "tsconfig.json" },
    // Each module's dependencies are its own package.json's plus the repository root's (the dev tools).
    combinedDependencies: true,

  },
};
