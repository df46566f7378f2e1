import { useState } from "preact/hooks";
import { flowLevels } from "../../../src/wire/flow-levels.js";
import { type Api, ApiError, query } from "../api.js";
import { ago, formatNumber, formatTime, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { href, navigate, type Route } from "../router.js";
import { type FlowDetail, type FlowNodeJson, type FlowPage, JOB_STATUSES } from "../types.js";
import { Badge, Facts, IdLink, Notice, Problem, Updated } from "./common.js";

const REFRESH_MS = 2_000;
const PAGE_SIZE = 50;
const UNFINISHED = new Set(["waiting", "queued", "retrying", "running"]);

/** Flows and batches, newest first, filtered by kind (kept in the URL); refreshed every 2 s. */
export function Flows({ api, route }: { api: Api; route: Route }) {
  const filter = { kind: route.params.get("kind") ?? "", cursor: route.params.get("cursor") ?? "" };
  const { data, error, updatedAt } = usePoll(
    () => api.get<FlowPage>(`/v1/flows${query({ kind: filter.kind, cursor: filter.cursor, limit: PAGE_SIZE })}`),
    REFRESH_MS,
    [api, filter.kind, filter.cursor],
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

/** One flow: its counts, and its jobs as a layered tree (level 0 waits on nothing in the flow), each with its live status. */
export function FlowPage({ api, id }: { api: Api; id: string }) {
  const { data: flow, error, updatedAt, refresh } = usePoll(() => api.get<FlowDetail>(`/v1/flows/${encodeURIComponent(id)}`), REFRESH_MS, [api, id]);
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

/** The jobs grouped by level, one row per level, each node with its status, kind and what it waits for. */
function FlowGraph({ jobs }: { jobs: FlowNodeJson[] }) {
  const levels = flowLevels(jobs);
  const rows: FlowNodeJson[][] = [];
  for (const entry of jobs) (rows[levels.get(entry.node) ?? 0] ??= []).push(entry);
  return (
    <ol class="flow-graph" data-testid="flow-graph">
      {rows.map((row, level) => (
        <li key={level} class="flow-level" data-testid="flow-level" data-level={level}>
          <span class="muted flow-level-label">Level {level}</span>
          <ul class="flow-nodes">
            {[...row]
              .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
              .map((entry) => (
                <li key={entry.node} class="flow-node" data-testid="flow-node" data-node={entry.node}>
                  <a href={href(`/jobs/${entry.job.id}`)}>
                    <strong>{entry.node}</strong>
                  </a>{" "}
                  <Badge value={entry.job.status} />
                  <div class="muted">{entry.job.kind}</div>
                  {entry.dependsOn.length > 0 ? (
                    <div class="muted flow-waits">waits for {entry.dependsOn.map((dep) => dep.node ?? shortId(dep.jobId)).join(", ")}</div>
                  ) : null}
                </li>
              ))}
          </ul>
        </li>
      ))}
    </ol>
  );
}
