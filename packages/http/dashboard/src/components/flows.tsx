import { useState } from "preact/hooks";
import { flowLevels } from "conveyor-jobs/browser";
import { type Api, ApiError, query } from "../api.js";
import { ago, formatNumber, formatTime, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { ScrollBox } from "./scroll-box.js";
import { href, navigate, type Route } from "../router.js";
import { type FlowDetail, type FlowJson, type FlowNodeJson, type FlowPage, JOB_STATUSES } from "../types.js";
import { Badge, Facts, IdLink, Notice, Problem, Updated } from "./common.js";

const REFRESH_MS = 2_000;
const PAGE_SIZE = 50;
const UNFINISHED = new Set(["waiting", "queued", "retrying", "sleeping", "running"]);

/** Flows and batches, newest first, filtered by kind (kept in the URL); refreshed every 2 s. */
export function Flows({ api, route }: { api: Api; route: Route }) {
  const filter = { kind: route.params.get("kind") ?? "", cursor: route.params.get("cursor") ?? "" };
  const { data, error, updatedAt } = usePoll(
    () => api.get<FlowPage>(`/v1/flows${query({ kind: filter.kind, cursor: filter.cursor, limit: PAGE_SIZE })}`),
    REFRESH_MS,
    [api, filter.kind, filter.cursor],
    "flows",
  );
  return (
    <section>
      <header class="page-head">
        <h1>Flows</h1>
        <Updated at={updatedAt} error={error} />
      </header>
      <form class="filters" onSubmit={(event) => event.preventDefault()} aria-label="filters">
        <label>
          Kind
          <select name="kind" value={filter.kind} onChange={(event) => navigate(href("/flows", { kind: event.currentTarget.value }))}>
            <option value="">any</option>
            <option value="flow">flow</option>
            <option value="batch">batch</option>
          </select>
        </label>
      </form>
      <Problem error={error} />
      {data && data.items.length === 0 ? <p class="muted">No flows.</p> : null}
      {data && data.items.length > 0 ? (
        <div class="table-wrap">
          <table class="data" data-testid="flows">
            <thead>
              <tr>
                <th>Flow</th>
                <th>Kind</th>
                <th>Name</th>
                <th>State</th>
                <th>Jobs</th>
                <th>Tenant</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((flow) => (
                <tr key={flow.id} data-flow-id={flow.id}>
                  <td>
                    <IdLink path="/flows" id={flow.id} />
                  </td>
                  <td>{flow.kind}</td>
                  <td>{flow.name ?? <span class="muted">—</span>}</td>
                  <td data-testid="flow-state">
                    <Badge value={flowState(flow.counts)} />
                  </td>
                  <td data-testid="flow-progress" title={countsText(flow.counts)}>
                    <FlowProgress counts={flow.counts} />
                  </td>
                  <td>{flow.tenant}</td>
                  <td title={flow.createdAt ?? undefined}>{ago(flow.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <nav class="pager">
        {filter.cursor ? <a href={href("/flows", { kind: filter.kind })}>← Newest</a> : null}
        {data?.nextCursor ? <a href={href("/flows", { kind: filter.kind, cursor: data.nextCursor })}>Older →</a> : null}
      </nav>
    </section>
  );
}

type Counts = FlowJson["counts"];

/**
 * A flow's state from its jobs' counts: running while any job runs; pending
 * while any has not ended (waiting, queued, retrying, sleeping); once all have ended,
 * succeeded when every job did, failed when any is dead, else cancelled.
 */
export function flowState(counts: Counts): "running" | "pending" | "succeeded" | "failed" | "cancelled" | "empty" {
  if (counts.running > 0) return "running";
  if (counts.waiting + counts.queued + counts.retrying + counts.sleeping > 0) return "pending";
  if (counts.dead > 0) return "failed";
  if (counts.cancelled > 0) return "cancelled";
  return counts.succeeded > 0 ? "succeeded" : "empty";
}

/** "2 waiting, 1 queued": the statuses a flow's jobs are in. */
function countsText(counts: Counts): string {
  return JOB_STATUSES.filter((status) => counts[status] > 0).map((status) => `${counts[status]} ${status}`).join(", ") || "no jobs";
}

/** "3 / 5 ended" with a bar: how far a flow got. */
function FlowProgress({ counts }: { counts: Counts }) {
  const total = JOB_STATUSES.reduce((sum, status) => sum + counts[status], 0);
  const ended = counts.succeeded + counts.cancelled + counts.dead;
  return (
    <span class="load">
      <meter min={0} max={Math.max(1, total)} value={ended} aria-hidden="true" />
      {formatNumber(ended)} / {formatNumber(total)} ended
    </span>
  );
}

/** One flow: its counts, and its jobs as a layered tree (level 0 waits on nothing in the flow), each with its live status. */
export function FlowPage({ api, id }: { api: Api; id: string }) {
  const { data: flow, error, updatedAt, refresh } = usePoll(() => api.get<FlowDetail>(`/v1/flows/${encodeURIComponent(id)}`), REFRESH_MS, [api, id], "flow");
  const [action, setAction] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);

  const cancel = async () => {
    setConfirming(false);
    setBusy(true);
    try {
      const { body } = await api.post<{ cancelled: number; cancelRequested: number }>(`/v1/flows/${encodeURIComponent(id)}/cancel`);
      setAction({
        kind: "ok",
        text: `Cancelled ${body.cancelled} job(s)${body.cancelRequested > 0 ? `; ${body.cancelRequested} running, told at their worker's next heartbeat` : ""}.`,
      });
    } catch (failure) {
      setAction({ kind: "error", text: failure instanceof ApiError ? failure.message : String(failure) });
    } finally {
      setBusy(false);
      await refresh();
    }
  };

  const back = (
    <p>
      <a href={href("/flows")}>← Flows</a>
    </p>
  );
  if (!flow) {
    return (
      <section>
        {back}
        <Problem error={error} />
        {error ? null : <p class="muted">Loading…</p>}
      </section>
    );
  }
  const unfinished = flow.jobs.some((entry) => UNFINISHED.has(entry.job.status));
  return (
    <section data-testid="flow-page">
      {back}
      <header class="page-head">
        <h1>
          {flow.name ?? `${flow.kind} ${shortId(flow.id)}`} <Badge value={flow.kind} />
        </h1>
        <Updated at={updatedAt} error={error} />
      </header>
      <Problem error={error} />
      {action ? <Notice kind={action.kind}>{action.text}</Notice> : null}
      {unfinished && !confirming ? (
        <button
          type="button"
          class="danger"
          disabled={busy}
          onClick={() => {
            setAction(null);
            setConfirming(true);
          }}
        >
          Cancel flow…
        </button>
      ) : null}
      {unfinished && confirming ? <CancelFlowConfirm flow={flow} busy={busy} onConfirm={cancel} onClose={() => setConfirming(false)} /> : null}
      <Facts
        items={[
          ["Id", <code>{flow.id}</code>],
          ["Tenant", flow.tenant],
          ["Created", formatTime(flow.createdAt)],
          ["Jobs", <span data-testid="flow-counts">{JOB_STATUSES.filter((status) => flow.counts[status] > 0).map((status) => `${flow.counts[status]} ${status}`).join(", ") || "none"}</span>],
          ...(flow.callbackJobId
            ? [
                [
                  "Callback",
                  <IdLink path="/jobs" id={flow.callbackJobId} />,
                ] as [string, preact.ComponentChildren],
              ]
            : []),
        ]}
      />
      <h2>Graph</h2>
      <FlowGraph jobs={flow.jobs} />
    </section>
  );
}

/**
 * The confirmation before a flow is cancelled: how many jobs it cancels (by
 * state, from the flow's live counts) and that running ones are asked to
 * stop. Nothing is sent until it is confirmed.
 */
function CancelFlowConfirm({ flow, busy, onConfirm, onClose }: { flow: FlowDetail; busy: boolean; onConfirm: () => void; onClose: () => void }) {
  const states = JOB_STATUSES.filter((status) => UNFINISHED.has(status) && flow.counts[status] > 0);
  const total = states.reduce((sum, status) => sum + flow.counts[status], 0);
  const running = flow.counts.running;
  const jobs = (n: number) => `${formatNumber(n)} job${n === 1 ? "" : "s"}`;
  return (
    <section class="panel bulk-dialog" data-testid="cancel-flow-confirm" role="dialog" aria-label="Cancel this flow?">
      <h2>Cancel this flow?</h2>
      <p data-testid="cancel-flow-count">
        This cancels its <strong>{jobs(total)}</strong> that have not ended: {states.map((status) => `${formatNumber(flow.counts[status])} ${status}`).join(", ")}.
      </p>
      <p class="muted">
        {running > 0 ? `The ${jobs(running)} running are asked to stop at their worker's next heartbeat. ` : ""}
        Jobs that waited on a cancelled one follow their policy; jobs that have ended stay as they are. This cannot be undone.
      </p>
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
          Cancel {jobs(total)}
        </button>
        <button type="button" class="secondary" onClick={onClose}>
          Keep them
        </button>
      </div>
    </section>
  );
}

/** Node size and spacing of the drawn graph, in px (the SVG is drawn at its natural size and scrolls in its box). */
const NODE_W = 168;
const NODE_H = 58;
const GAP_X = 20;
const GAP_Y = 48;
const PAD = 12;
const NAME_CHARS = 22;

/** Statuses drawn as ended badly, and as ended well, for the colour of a node and of the edges leaving it. */
const ENDED_BADLY = new Set(["dead", "cancelled"]);

/**
 * The flow's graph as SVG: one row per level (level 0 waits on nothing in
 * the flow; each other job sits one row below the deepest job it waits
 * on), and an arrow from each job to each job that waits on it. Within a
 * row, jobs are ordered by where their parents are, so edges cross less.
 * Each node links to its job and shows its name, status and kind.
 */
function FlowGraph({ jobs }: { jobs: FlowNodeJson[] }) {
  const levels = flowLevels(jobs);
  const rows: FlowNodeJson[][] = [];
  for (const entry of jobs) (rows[levels.get(entry.node) ?? 0] ??= []).push(entry);
  const column = new Map<string, number>();
  rows.forEach((row, level) => {
    const where = (entry: FlowNodeJson) => {
      const parents = entry.dependsOn.flatMap((dep) => (dep.node !== null && column.has(dep.node) ? [column.get(dep.node)!] : []));
      return parents.length === 0 ? Number.POSITIVE_INFINITY : parents.reduce((a, b) => a + b, 0) / parents.length;
    };
    row.sort((a, b) => (level === 0 ? 0 : where(a) - where(b)) || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
    row.forEach((entry, index) => column.set(entry.node, index));
  });
  const widest = Math.max(1, ...rows.map((row) => row?.length ?? 0));
  const width = PAD * 2 + widest * NODE_W + (widest - 1) * GAP_X;
  const height = PAD * 2 + rows.length * NODE_H + Math.max(0, rows.length - 1) * GAP_Y;
  const place = new Map<string, { x: number; y: number; entry: FlowNodeJson; level: number }>();
  rows.forEach((row, level) => {
    const offset = ((widest - row.length) * (NODE_W + GAP_X)) / 2;
    row.forEach((entry, index) => place.set(entry.node, { x: PAD + offset + index * (NODE_W + GAP_X), y: PAD + level * (NODE_H + GAP_Y), entry, level }));
  });
  const edges = jobs.flatMap((child) =>
    child.dependsOn.flatMap((dep) => {
      const from = dep.node === null ? undefined : place.get(dep.node);
      const to = place.get(child.node);
      return from && to && from !== to ? [{ from, to }] : [];
    }),
  );
  return (
    <ScrollBox class="flow-canvas" label="The graph">
      <svg
        class="flow-graph"
        data-testid="flow-graph"
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={`the flow's ${jobs.length} jobs in ${rows.length} levels, with an arrow from each job to the jobs waiting on it`}
      >
        <defs>
          <marker id="flow-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="flow-arrow" />
          </marker>
        </defs>
        {edges.map(({ from, to }) => {
          const x1 = from.x + NODE_W / 2;
          const y1 = from.y + NODE_H;
          const x2 = to.x + NODE_W / 2;
          const y2 = to.y;
          const bend = Math.max(GAP_Y / 2, (y2 - y1) / 2);
          const status = from.entry.job.status;
          return (
            <path
              key={`${from.entry.node}->${to.entry.node}`}
              data-testid="flow-edge"
              data-from={from.entry.node}
              data-to={to.entry.node}
              class={`flow-edge ${status === "succeeded" ? "edge-done" : ENDED_BADLY.has(status) ? "edge-bad" : ""}`}
              d={`M ${x1} ${y1} C ${x1} ${y1 + bend}, ${x2} ${y2 - bend}, ${x2} ${y2}`}
              marker-end="url(#flow-arrow)"
            />
          );
        })}
        {[...place.values()].map(({ x, y, entry, level }) => {
          const waits = entry.dependsOn.map((dep) => dep.node ?? shortId(dep.jobId));
          const name = entry.node.length > NAME_CHARS ? `${entry.node.slice(0, NAME_CHARS - 1)}…` : entry.node;
          return (
            <g
              key={entry.node}
              class={`flow-node st-${entry.job.status.replace(/[^a-z_]/g, "")}`}
              data-testid="flow-node"
              data-node={entry.node}
              data-level={level}
              transform={`translate(${x} ${y})`}
            >
              <title>{`${entry.node} (${entry.job.kind}): ${entry.job.status}${waits.length > 0 ? `; waits for ${waits.join(", ")}` : ""}`}</title>
              <a href={href(`/jobs/${entry.job.id}`)}>
                <rect class="flow-box" width={NODE_W} height={NODE_H} rx={6} />
                <text x={10} y={20} class="flow-name">
                  {name}
                </text>
              </a>
              <text x={10} y={38} class="flow-status" data-testid="status">
                {entry.job.status}
              </text>
              <text x={10} y={52} class="flow-kind">
                {entry.job.kind.length > NAME_CHARS + 4 ? `${entry.job.kind.slice(0, NAME_CHARS + 3)}…` : entry.job.kind}
              </text>
            </g>
          );
        })}
      </svg>
    </ScrollBox>
  );
}
