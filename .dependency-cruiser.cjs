// Which part of Conveyor may import which, checked by `npm run depcheck`
// (part of `npm test`). Dependencies point one way, from the entry points
// down to core:
//
//   src/index.ts, src/http/index.ts, src/cli   entry points (composition roots)
//   src/testing                                the `conveyor-jobs/testing` entry: helpers for users' tests
//   src/conveyor.ts                            Conveyor = client + its workers
//   src/http                                   the API, built from a client
//   src/client   src/worker                    side by side, never each other
//   src/wire     src/metrics   src/tracing     JSON the API and CLI speak; worker metrics; OpenTelemetry spans
//   src/store                                  all SQL
//   src/core     src/embedded                  pure model and rules; the embedded server
//
// Type-only imports count: a cycle through types still ties modules
// together (the store's facade and its helpers did exactly that).

/** Paths of our own modules outside `dirs` (each a path under src/, without a trailing slash). */
const outside = (...dirs) => `^src/(?!(?:${dirs.join("|")})(?:/|\\.ts$))`;

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
      name: "core-imports-nothing-of-ours",
      comment: "core is the pure model (states, errors, ids, retry math, job definitions): everything may use it, it uses nothing.",
      severity: "error",
      from: { path: "^src/core/" },
      to: { path: outside("core") },
    },
    {
      name: "embedded-is-a-leaf",
      comment: "The embedded PostgreSQL server is used by the CLI and tests, and published as its own entry; it needs only core's errors.",
      severity: "error",
      from: { path: "^src/embedded/" },
      to: { path: outside("embedded", "core") },
    },
    {
      name: "store-imports-only-core",
      comment: "The store is every statement Conveyor runs; it knows rows and SQL, not who calls it.",
      severity: "error",
      from: { path: "^src/store/" },
      to: { path: outside("store", "core") },
    },
    {
      name: "wire-imports-only-core",
      comment: "The JSON the API and the CLI share (shapes, strict parsing, the job to enqueue) sits below both, so neither imports the other for it.",
      severity: "error",
      from: { path: "^src/wire/" },
      to: { path: outside("wire", "core") },
    },
    {
      name: "metrics-imports-only-core",
      comment: "The worker's Prometheus metrics and their server are used by the worker and the CLI; they know nothing of either.",
      severity: "error",
      from: { path: "^src/metrics/" },
      to: { path: outside("metrics", "core") },
    },
    {
      name: "tracing-imports-only-core",
      comment: "OpenTelemetry spans for the client's enqueues and the worker's attempts; it knows neither, only core's job shapes.",
      severity: "error",
      from: { path: "^src/tracing/" },
      to: { path: outside("tracing", "core") },
    },
    {
      name: "testing-is-an-entry-point",
      comment: "The helpers of `conveyor-jobs/testing` compose a client and its workers as an application would; nothing of the library imports them, and they never load the HTTP layer or the CLI.",
      severity: "error",
      from: { path: "^src/testing/" },
      to: { path: "^src/(http|cli)/" },
    },
    {
      name: "nothing-imports-the-testing-helpers",
      comment: "Test helpers are an entry of their own, for users' tests; the library never depends on them.",
      severity: "error",
      from: { pathNot: "^src/testing/" },
      to: { path: "^src/testing/" },
    },
    {
      name: "client-imports-store-and-core",
      comment: "The client knows nothing of workers, HTTP or the CLI; src/conveyor.ts composes it with workers.",
      severity: "error",
      from: { path: "^src/client/" },
      to: { path: outside("client", "store", "core", "tracing") },
    },
    {
      name: "worker-imports-store-core-metrics",
      comment: "A worker takes what it needs of a client as WorkerDeps, so it never imports the client (that was the client ⇄ worker cycle).",
      severity: "error",
      from: { path: "^src/worker/" },
      to: { path: outside("worker", "store", "core", "metrics", "tracing") },
    },
    {
      name: "http-imports-client-and-below",
      comment: "The API is built from a client; it runs no workers and knows nothing of the CLI.",
      severity: "error",
      from: { path: "^src/http/" },
      to: { path: outside("http", "client", "store", "core", "wire") },
    },
    {
      name: "only-entry-points-import-the-composition",
      comment: "src/conveyor.ts is the top of the library: the package entry and the CLI use it, nothing under it may.",
      severity: "error",
      from: { pathNot: "^src/(index\\.ts|cli/|testing/)" },
      to: { path: "^src/conveyor\\.ts$" },
    },
    {
      name: "only-conveyor-api-imports-http",
      comment: "The HTTP layer is loaded by `conveyor api`/`conveyor dev` (cli/api-server.ts) and by its own package entry; anything else it would pull Fastify in.",
      severity: "error",
      from: { pathNot: "^src/(http/|cli/api-server\\.ts$)" },
      to: { path: "^src/http/" },
    },
    {
      name: "nothing-imports-the-cli",
      comment: "The CLI is an entry point: it reads process.env and argv, which the library never does.",
      severity: "error",
      from: { pathNot: "^src/cli/" },
      to: { path: "^src/cli/" },
    },
    {
      name: "nothing-imports-the-dashboard",
      comment: "The dashboard is built separately and served as static files; the server never imports its code.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^dashboard/" },
    },
    {
      name: "dashboard-imports-only-wire-and-core",
      comment: "The dashboard runs in the browser: it may share the API's JSON types and core constants, never server code.",
      severity: "error",
      from: { path: "^dashboard/" },
      to: { path: outside("wire", "core") },
    },
    {
      name: "library-uses-no-dev-dependencies",
      comment:
        "What ships under dist/src must run with the package's dependencies alone (unit tests beside the code may use vitest). An optional peer (@opentelemetry/api) is also a devDependency for the tests; src/tracing imports it dynamically and runs without it.",
      severity: "error",
      from: { path: "^src/", pathNot: "\\.test\\.ts$" },
      to: { dependencyTypes: ["npm-dev"], dependencyTypesNot: ["type-only", "npm-peer"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
  },
};
