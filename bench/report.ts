import type { Figure } from "./lib/stats.js";
import { figureOf } from "./lib/stats.js";
import { SYSTEM_NAMES, type SystemName } from "./systems/system.js";
import type { PressureResult } from "./workloads/pressure.js";

/** Every figure the bench reports per system. Rates are jobs/s. */
export const METRICS = {
  enqueueSingle: { label: "enqueue, one at a time (jobs/s)", higherIsBetter: true },
  enqueueConcurrent: { label: "  same, 8 callers at once (jobs/s)", higherIsBetter: true },
  enqueueBatch: { label: "enqueue, batches of 1,000 (jobs/s)", higherIsBetter: true },
  enqueueBatchSingleCall: { label: "enqueue, all in one call (jobs/s)", higherIsBetter: true },
  process: { label: "process, per-job handlers (jobs/s)", higherIsBetter: true },
  processFromFirstJob: { label: "  same, from the first handler call", higherIsBetter: true },
  processArrayHandler: { label: "process, array handler (jobs/s)", higherIsBetter: true },
  processNotKept: { label: "process, succeeded jobs not kept (jobs/s)", higherIsBetter: true },
  latencyP50Ms: { label: "enqueue→start p50 (ms)", higherIsBetter: false },
  latencyP95Ms: { label: "enqueue→start p95 (ms)", higherIsBetter: false },
  latencyP99Ms: { label: "enqueue→start p99 (ms)", higherIsBetter: false },
  processAt10k: { label: "process, 10k waiting (jobs/s)", higherIsBetter: true },
  processAt100k: { label: "process, 100k waiting (jobs/s)", higherIsBetter: true },
  processAt1M: { label: "process, 1M waiting (jobs/s)", higherIsBetter: true },
  fillAtLarge: { label: "  fill rate of the large queue (jobs/s)", higherIsBetter: true },
  processAt50kFinished: { label: "process, 10k waiting, 50k finished kept (jobs/s)", higherIsBetter: true },
  processAt1MFinished: { label: "process, 10k waiting, 1M finished kept (jobs/s)", higherIsBetter: true },
  peakRssMb: { label: "worker peak RSS (MB)", higherIsBetter: false },
  workerCpuUsPerJob: { label: "worker CPU per job (µs)", higherIsBetter: false },
  // A slope near zero makes a ratio meaningless: compared by value only.
  rssSlopeMbPer100k: { label: "worker RSS slope over a long run (MB per 100k jobs)", higherIsBetter: false, noRatio: true },
  rssAfterWarmUpMb: { label: "  RSS after warm-up (MB)", higherIsBetter: false },
  rssAtEndMb: { label: "  RSS at the end (MB)", higherIsBetter: false },
  workflowFanInS: { label: "workflow fan-in, enqueue→last done (s)", higherIsBetter: false },
  workflowFanInUsPerEdge: { label: "  same, per dependency (µs)", higherIsBetter: false },
  workflowFanInServerUsPerEdge: { label: "  server time releasing, per dependency (µs)", higherIsBetter: false },
  workflowChainS: { label: "workflow chain, enqueue→last done (s)", higherIsBetter: false },
  workflowChainUsPerEdge: { label: "  same, per dependency (µs)", higherIsBetter: false },
  workflowChainServerUsPerEdge: { label: "  server time releasing, per dependency (µs)", higherIsBetter: false },
  workflowLayeredS: { label: "workflow layered graph, enqueue→last done (s)", higherIsBetter: false },
  workflowLayeredUsPerEdge: { label: "  same, per dependency (µs)", higherIsBetter: false },
  workflowLayeredServerUsPerEdge: { label: "  server time releasing, per dependency (µs)", higherIsBetter: false },
  durableJobsPerS: { label: "durable, jobs of 10 steps (jobs/s)", higherIsBetter: true },
  durableJobsPerSFromFirstStep: { label: "  same, from the first step", higherIsBetter: true },
  durableNoStepJobsPerS: { label: "  same, jobs of no steps (jobs/s)", higherIsBetter: true },
  durableServerUsPerStep: { label: "  server time per step (µs)", higherIsBetter: false },
  durableWalBytesPerStep: { label: "  WAL per step (bytes)", higherIsBetter: false },
  durableServerUsPerJob: { label: "  server time per job of no steps (µs)", higherIsBetter: false },
  durableWalBytesPerJob: { label: "  WAL per job of no steps (bytes)", higherIsBetter: false },
  durableResumeS: { label: "durable, SIGKILL → all resumed and done (s)", higherIsBetter: false },
  batchJobsPerS: { label: "process in batches, batch handler (jobs/s)", higherIsBetter: true },
  batchServerUsPerJob: { label: "  server time per job (µs)", higherIsBetter: false },
  batchServerCpuUsPerJob: { label: "  server CPU per job (µs)", higherIsBetter: false },
  batchWorkerCpuUsPerJob: { label: "  worker CPU per job (µs)", higherIsBetter: false },
  batchPerJobJobsPerS: { label: "  same jobs, per-job handlers (jobs/s)", higherIsBetter: true },
  batchPerJobServerUsPerJob: { label: "    server time per job (µs)", higherIsBetter: false },
  batchPerJobServerCpuUsPerJob: { label: "    server CPU per job (µs)", higherIsBetter: false },
  batchPerJobWorkerCpuUsPerJob: { label: "    worker CPU per job (µs)", higherIsBetter: false },
  sleepingNoneJobsPerS: { label: "process, 50k waiting, no job sleeping (jobs/s)", higherIsBetter: true },
  sleepingJobsPerS: { label: "  same, beside the sleeping jobs (jobs/s)", higherIsBetter: true },
} as const;
export type MetricKey = keyof typeof METRICS;

export interface SystemReport {
  settings: Readonly<Record<string, string>>;
  skipped: string | null;
  /** Each figure per run (NaN where a run failed), in run order. */
  runs: Partial<Record<MetricKey, number[]>>;
  notes: Partial<Record<MetricKey, string>>;
}

export interface Report {
  meta: Record<string, unknown>;
  /**
   * The single-INSERT rate, medians: by pgbench (null when it is not
   * installed) and from a Node `pg` loop, the ceiling any Node client meets.
   */
  postgres: { pgbench: number | null; nodePg: number | null };
  systems: Partial<Record<SystemName, SystemReport>>;
}

/** The figure (median, min–max) of one metric of one system. */
export function figure(report: Report, system: SystemName, metric: MetricKey): Figure | null {
  const entry = report.systems[system];
  const runs = entry?.runs[metric];
  return runs ? figureOf(runs, entry.notes[metric]) : null;
}

/** Conveyor/peer, run by run (each run's systems ran back to back), then the median and range of those ratios. */
export function ratio(report: Report, peer: SystemName, metric: MetricKey, peerMetric: MetricKey = metric): Figure | null {
  if ("noRatio" in METRICS[metric]) return null;
  const ours = report.systems.conveyor?.runs[metric];
  const theirs = report.systems[peer]?.runs[peerMetric];
  if (!ours || !theirs) return null;
  const perRun = ours.map((value, i) => value / (theirs[i] ?? NaN));
  return figureOf(perRun);
}

/** The ceiling the single-enqueue target is set against: pgbench's rate, else the Node loop's. */
function insertLimit(report: Report): number | null {
  return report.postgres.pgbench ?? report.postgres.nodePg;
}

const roundOrNull = (value: number | null) => (value === null ? null : round(value));

function insertLimitBy(report: Report): "pgbench" | "node-pg" | null {
  return report.postgres.pgbench !== null ? "pgbench" : report.postgres.nodePg !== null ? "node-pg" : null;
}

/** The JSON the issue asks for: medians at the top, ranges and runs beside them. */
export function toJson(report: Report): unknown {
  const systems: Record<string, unknown> = {};
  for (const name of SYSTEM_NAMES) {
    const entry = report.systems[name];
    if (!entry) continue;
    const values: Record<string, number | null> = {};
    const ranges: Record<string, Figure> = {};
    for (const metric of Object.keys(METRICS) as MetricKey[]) {
      const fig = figure(report, name, metric);
      if (!entry.runs[metric]) continue;
      values[metric] = fig ? round(fig.median) : null;
      if (fig) ranges[metric] = { ...fig, median: round(fig.median), min: round(fig.min), max: round(fig.max), runs: fig.runs.map(round) };
    }
    systems[name] = { ...values, skipped: entry.skipped, settings: entry.settings, ranges };
  }
  const ratios: Record<string, Record<string, Figure | null>> = {};
  for (const peer of SYSTEM_NAMES.filter((n) => n !== "conveyor")) {
    if (!report.systems[peer] || report.systems[peer]!.skipped) continue;
    ratios[peer] = {};
    for (const metric of Object.keys(METRICS) as MetricKey[]) {
      const r = ratio(report, peer, metric);
      if (r) ratios[peer]![metric] = { ...r, median: round(r.median, 3), min: round(r.min, 3), max: round(r.max, 3), runs: r.runs.map((v) => round(v, 3)) };
    }
  }
  return {
    systems,
    postgres: {
      insertLimit: roundOrNull(insertLimit(report)),
      insertLimitBy: insertLimitBy(report),
      insertLimitNodePg: roundOrNull(report.postgres.nodePg),
    },
    ratios,
    targets: targets(report),
    meta: report.meta,
  };
}

function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

function fmt(value: number): string {
  if (!Number.isFinite(value)) return "—";
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString("en-US");
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function cell(fig: Figure | null): string {
  if (!fig) return "—";
  const range = fig.runs.filter(Number.isFinite).length > 1 ? ` (${fmt(fig.min)}–${fmt(fig.max)})` : "";
  return `${fmt(fig.median)}${range}${fig.note ? " *" : ""}`;
}

/** The table printed on stdout (and pasted into the README): one row per metric, one column per system, then Conveyor/peer. */
export function table(report: Report): string {
  const systems = SYSTEM_NAMES.filter((name) => report.systems[name]);
  const peers = report.systems.conveyor ? systems.filter((name) => name !== "conveyor" && !report.systems[name]!.skipped) : [];
  const header = ["", ...systems, ...peers.map((peer) => `conveyor / ${peer}`)];
  const rows: string[][] = [];
  for (const metric of Object.keys(METRICS) as MetricKey[]) {
    if (!systems.some((name) => report.systems[name]!.runs[metric])) continue;
    rows.push([
      METRICS[metric].label,
      ...systems.map((name) => (report.systems[name]!.skipped ? "skipped" : cell(figure(report, name, metric)))),
      ...peers.map((peer) => {
        const r = ratio(report, peer, metric);
        return r ? `${r.median.toFixed(2)}×` : "";
      }),
    ]);
  }
  const { pgbench, nodePg } = report.postgres;
  const postgresRow = (label: string, value: number) =>
    rows.push([label, fmt(value), ...systems.slice(1).map(() => ""), ...peers.map(() => "")]);
  if (pgbench !== null) postgresRow("PostgreSQL single-INSERT limit (rows/s)", pgbench);
  if (nodePg !== null) postgresRow(pgbench === null ? "PostgreSQL single-INSERT limit, Node `pg` loop (rows/s)" : "  same, from a Node `pg` loop (rows/s)", nodePg);
  const notes = systems.flatMap((name) =>
    Object.entries(report.systems[name]!.notes).map(([metric, note]) => `* ${name} ${metric}: ${note}`),
  );
  const skipped = systems.filter((name) => report.systems[name]!.skipped).map((name) => `${name} skipped: ${report.systems[name]!.skipped}`);
  return [markdown(header, rows), "", ...notes, ...skipped].join("\n").trimEnd();
}

/** The pressure workload's table: a row per system and phase (a system that failed gets one row saying why). */
export function pressureTable(results: Partial<Record<SystemName, PressureResult | string>>): string {
  const header = ["system", "phase", "offered (jobs/s)", "done (jobs/s)", "pickup p50 (ms)", "pickup p99 (ms)", "backlog at end", "dead tuples at end", "tables + indexes (MB)"];
  const rows: string[][] = [];
  const ms = (value: number | null) => (value === null ? "—" : Number.isFinite(value) ? fmt(value) : "not started");
  for (const name of SYSTEM_NAMES) {
    const result = results[name];
    if (result === undefined) continue;
    if (typeof result === "string") {
      rows.push([name, result, ...header.slice(2).map(() => "")]);
      continue;
    }
    for (const phase of result.phases) {
      const drain = phase.name === "drain";
      const label = drain
        ? result.drainSeconds === null
          ? `drain (not done in ${fmt(phase.seconds)} s)`
          : `drain (${fmt(result.drainSeconds)} s)`
        : phase.name;
      rows.push([
        name,
        label,
        drain ? "—" : fmt(phase.offeredPerS),
        fmt(phase.donePerS),
        ms(phase.p50Ms),
        `${ms(phase.p99Ms)}${phase.notStarted > 0 ? ` (${phase.notStarted.toLocaleString("en-US")} never started)` : ""}`,
        phase.backlog.toLocaleString("en-US"),
        phase.deadTuples.toLocaleString("en-US"),
        fmt(phase.sizeMb),
      ]);
    }
  }
  return markdown(header, rows);
}

/** A markdown table, the first column left-aligned and the others right. */
function markdown(header: string[], rows: string[][]): string {
  const widths = header.map((_, i) => Math.max(header[i]!.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (row: string[]) => `| ${row.map((text, i) => (i === 0 ? text.padEnd(widths[i]!) : text.padStart(widths[i]!))).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (i === 0 ? `:${"-".repeat(w + 1)}` : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

interface Target {
  target: string;
  value: string;
  met: boolean | null;
}

/** The issue's targets, judged on this run's figures (ratios run by run, then the median). */
export function targets(report: Report): Target[] {
  const med = (system: SystemName, metric: MetricKey) => figure(report, system, metric)?.median ?? NaN;
  const r = (peer: SystemName, metric: MetricKey, peerMetric?: MetricKey) => ratio(report, peer, metric, peerMetric)?.median ?? NaN;
  const live = (peer: SystemName) => Boolean(report.systems[peer] && !report.systems[peer]!.skipped);
  const judge = (value: number, ok: (v: number) => boolean) => (Number.isFinite(value) ? ok(value) : null);
  const out: Target[] = [];
  const add = (target: string, value: number, ok: (v: number) => boolean, unit = "×") =>
    out.push({ target, value: Number.isFinite(value) ? `${unit === "×" ? value.toFixed(2) : fmt(value)}${unit}` : "—", met: judge(value, ok) });

  add("process ≥ 1.2× graphile-worker", r("graphile-worker", "process"), (v) => v >= 1.2);
  add("process, succeeded jobs not kept ≥ 1.2× graphile-worker", r("graphile-worker", "processNotKept", "process"), (v) => v >= 1.2);
  if (live("bullmq")) add("process > BullMQ", r("bullmq", "process"), (v) => v > 1);
  if (live("bullmq-aof")) add("process > BullMQ on AOF everysec", r("bullmq-aof", "process"), (v) => v > 1);
  if (live("bullmq-pg")) add("process > BullMQ on PostgreSQL", r("bullmq-pg", "process"), (v) => v > 1);
  add("process ≥ 10× pg-boss per-job", r("pg-boss", "process"), (v) => v >= 10);
  add("process > pg-boss array handler", r("pg-boss", "process", "processArrayHandler"), (v) => v > 1);
  const batchPeers = SYSTEM_NAMES.filter((name) => name !== "conveyor" && live(name));
  const bestBatch = Math.max(...batchPeers.map((peer) => med(peer, "enqueueBatch")).filter(Number.isFinite));
  add("batch enqueue ≥ 2× best peer", med("conveyor", "enqueueBatch") / bestBatch, (v) => v >= 2);
  add("one call of all jobs faster than batches of 1,000", med("conveyor", "enqueueBatchSingleCall") / med("conveyor", "enqueueBatch"), (v) => v > 1);
  const bestPgSingle = Math.max(...[med("graphile-worker", "enqueueSingle"), med("pg-boss", "enqueueSingle")].filter(Number.isFinite));
  add("single enqueue ≥ 3× best Postgres peer", med("conveyor", "enqueueSingle") / bestPgSingle, (v) => v >= 3);
  add(
    "single enqueue ≥ 50% of the single-INSERT limit",
    med("conveyor", "enqueueSingle") / (insertLimit(report) ?? NaN),
    (v) => v >= 0.5,
  );
  for (const p of ["latencyP50Ms", "latencyP99Ms"] as const) {
    const peer = live("graphile-worker") ? med("graphile-worker", p) : NaN;
    add(`latency ${p.slice(7, 10)} ≤ graphile-worker (${fmt(peer)} ms)`, Number.isFinite(peer) ? med("conveyor", p) : NaN, (v) => v <= peer, " ms");
  }
  add("worker RSS slope < 1 MB per 100k jobs", med("conveyor", "rssSlopeMbPer100k"), (v) => v < 1, " MB");
  add("1M waiting ≥ 90% of 10k waiting", med("conveyor", "processAt1M") / med("conveyor", "processAt10k"), (v) => v >= 0.9);
  add("batch handler ≥ 1.5× pg-boss batch handler", r("pg-boss", "batchJobsPerS"), (v) => v >= 1.5);
  add("claim beside sleeping jobs ≥ 90% of none", med("conveyor", "sleepingJobsPerS") / med("conveyor", "sleepingNoneJobsPerS"), (v) => v >= 0.9);
  return out;
}

export function targetsText(report: Report): string {
  return targets(report)
    .map((t) => `  [${t.met === null ? " " : t.met ? "x" : " "}] ${t.target}: ${t.value}${t.met === false ? "  (not met)" : t.met === null ? "  (not measured)" : ""}`)
    .join("\n");
}

const COLORS: Record<SystemName, string> = {
  conveyor: "#2f6fdf",
  "graphile-worker": "#e08a1e",
  "pg-boss": "#3a9a5b",
  bullmq: "#b0413e",
  "bullmq-aof": "#6e2523",
  "bullmq-pg": "#d9777a",
  dbos: "#7a4fbf",
};

/** A bar chart, one panel per headline figure, bars per system with min–max whiskers. Plain SVG, no library. */
export function svgChart(report: Report, title: string): string {
  type Extra = { label: string; fig: Figure | null; color: string };
  const limit = insertLimit(report);
  const panels: Array<{ metric: MetricKey; title: string; extras?: Extra[] }> = [
    {
      metric: "enqueueSingle",
      title: "Enqueue one at a time (jobs/s)",
      extras: limit === null ? [] : [{ label: "INSERT limit", fig: figureOf([limit]), color: "#999999" }],
    },
    { metric: "enqueueBatch", title: "Enqueue in batches of 1,000 (jobs/s)" },
    {
      metric: "process",
      title: "Process, per-job handlers (jobs/s)",
      extras: report.systems["pg-boss"]?.runs.processArrayHandler
        ? [{ label: "pg-boss array", fig: figure(report, "pg-boss", "processArrayHandler"), color: "#8cc9a0" }]
        : [],
    },
    { metric: "latencyP50Ms", title: "Enqueue → start p50 (ms, lower is better)" },
    { metric: "latencyP99Ms", title: "Enqueue → start p99 (ms, lower is better)" },
    { metric: report.systems.conveyor?.runs.processAt1M ? "processAt1M" : "processAt10k", title: "" },
    { metric: "peakRssMb", title: "Worker peak RSS (MB, lower is better)" },
  ];
  panels[5]!.title = panels[5]!.metric === "processAt1M" ? "Process with 1M waiting (jobs/s)" : "Process with 10k waiting (jobs/s)";
  // A system measured in none of the panels (DBOS: durable workloads only) gets no bars.
  const systems = SYSTEM_NAMES.filter(
    (name) => report.systems[name] && !report.systems[name]!.skipped && panels.some(({ metric }) => report.systems[name]!.runs[metric]),
  );
  const width = 900;
  const panelW = 420;
  const barH = 18;
  const panelH = 40 + (systems.length + 1) * (barH + 8) + 10;
  const cols = 2;
  const rowsN = Math.ceil(panels.length / cols);
  const top = 60;
  const height = top + rowsN * panelH + 40;
  const labelW = 120;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  out.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  out.push(`<text x="20" y="28" font-size="17" font-weight="bold">${escape(title)}</text>`);
  out.push(`<text x="20" y="46" fill="#555">${escape(String(report.meta.subtitle ?? ""))}</text>`);
  panels.forEach((panel, index) => {
    const x0 = 20 + (index % cols) * (panelW + 20);
    const y0 = top + Math.floor(index / cols) * panelH;
    out.push(`<text x="${x0}" y="${y0 + 18}" font-weight="bold">${escape(panel.title)}</text>`);
    const figs: Extra[] = [
      ...systems.map((name) => ({ label: name as string, fig: figure(report, name, panel.metric), color: COLORS[name] })),
      ...(panel.extras ?? []),
    ];
    const max = Math.max(1e-9, ...figs.map(({ fig }) => (fig ? fig.max : 0)));
    const plotW = panelW - labelW - 70;
    figs.forEach(({ label, fig, color }, i) => {
      const y = y0 + 30 + i * (barH + 8);
      out.push(`<text x="${x0 + labelW - 6}" y="${y + barH - 5}" text-anchor="end">${escape(label)}</text>`);
      if (!fig) {
        out.push(`<text x="${x0 + labelW + 4}" y="${y + barH - 5}" fill="#888">not measured</text>`);
        return;
      }
      const w = (fig.median / max) * plotW;
      out.push(`<rect x="${x0 + labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${color}"/>`);
      if (fig.runs.filter(Number.isFinite).length > 1) {
        const a = x0 + labelW + (fig.min / max) * plotW;
        const b = x0 + labelW + (fig.max / max) * plotW;
        const cy = y + barH / 2;
        out.push(`<path d="M${a.toFixed(1)} ${cy} H${b.toFixed(1)} M${a.toFixed(1)} ${cy - 4} V${cy + 4} M${b.toFixed(1)} ${cy - 4} V${cy + 4}" stroke="#222" stroke-width="1"/>`);
      }
      const labelX = x0 + labelW + Math.max(w, (fig.max / max) * plotW) + 6;
      out.push(`<text x="${labelX.toFixed(1)}" y="${y + barH - 5}">${escape(fmt(fig.median))}</text>`);
    });
  });
  out.push(
    `<text x="20" y="${height - 14}" fill="#555">Bars: median of the runs; whiskers: min–max. Source: bench/ (npm run bench).</text>`,
  );
  out.push(`</svg>`);
  return out.join("\n");
}

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
