import { useEffect, useState } from "preact/hooks";
import { type Api, query } from "../api.js";
import { ago, formatNumber, formatTime } from "../format.js";
import { usePoll } from "../poll.js";
import { href, type Route } from "../router.js";
import { describeSearch, searchOfFilter, setFields } from "../search.js";
import type { BulkActionJson, BulkActionPage } from "../types.js";
import { actionLabel, BulkProgress, restText, touchedSummary, useBulkAction } from "./bulk-progress.js";
import { Badge, Facts, IdLink, JsonBlock, Problem, Updated } from "./common.js";

/** While an operation on the page runs, the list moves; otherwise it changes only when someone starts one. */
const RUNNING_REFRESH_MS = 2_000;
const IDLE_REFRESH_MS = 10_000;
const PAGE_SIZE = 50;

/** Bulk actions, newest first: the record of who did what to which jobs, and how far each got. */
export function BulkActions({ api, route }: { api: Api; route: Route }) {
  const cursor = route.params.get("cursor") ?? "";
  const [anyRunning, setAnyRunning] = useState(false);
  const { data, error, updatedAt } = usePoll(
    () => api.get<BulkActionPage>(`/v1/bulk-actions${query({ cursor, limit: PAGE_SIZE })}`),
    anyRunning ? RUNNING_REFRESH_MS : IDLE_REFRESH_MS,
    [api, cursor],
    "bulk-actions",
  );
  useEffect(() => setAnyRunning(data?.items.some((operation) => operation.status === "running") ?? false), [data]);
  return (
    <section>
      <header class="page-head">
        <h1>Bulk actions</h1>
        <Updated at={updatedAt} error={error} />
      </header>
      <p class="muted">
        Start one from the <a href={href("/jobs")}>Jobs</a> page: it acts on every job the search there finds.
      </p>
      <Problem error={error} />
      {data && data.items.length === 0 ? <p class="muted">No bulk action yet.</p> : null}
      {data && data.items.length > 0 ? <BulkActionTable operations={data.items} /> : null}
      <nav class="pager">
        {cursor ? <a href={href("/bulk-actions")}>← Newest</a> : null}
        {data?.nextCursor ? <a href={href("/bulk-actions", { cursor: data.nextCursor })}>Older →</a> : null}
      </nav>
    </section>
  );
}

function BulkActionTable({ operations }: { operations: BulkActionJson[] }) {
  return (
    <div class="table-wrap">
      <table class="data" data-testid="bulk-actions">
        <thead>
          <tr>
            <th>Operation</th>
            <th>Action</th>
            <th>Jobs</th>
            <th>Status</th>
            <th>Progress</th>
            <th>Requested by</th>
            <th>Started</th>
            <th>Finished</th>
          </tr>
        </thead>
        <tbody>
          {operations.map((operation) => (
            <tr key={operation.id} data-operation-id={operation.id}>
              <td>
                <IdLink path="/bulk-actions" id={operation.id} />
              </td>
              <td>{actionLabel(operation)}</td>
              <td class="clip" title={describeSearch(searchOfFilter(operation.filter))}>
                {describeSearch(searchOfFilter(operation.filter))}
                {operation.tenant !== null && operation.filter.tenant === undefined ? <span class="muted"> (tenant {operation.tenant})</span> : null}
              </td>
              <td>
                <Badge value={operation.status} />
              </td>
              <td class={restText(operation) ? "words" : "num"} data-testid="touched" title={restText(operation) ?? undefined}>
                {touchedSummary(operation)}
              </td>
              <td>{operation.requestedBy ?? <span class="muted">unknown</span>}</td>
              <td title={formatTime(operation.createdAt)}>{ago(operation.createdAt)}</td>
              <td title={formatTime(operation.finishedAt)}>{operation.finishedAt ? ago(operation.finishedAt) : <span class="muted">—</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One operation: what was asked, by whom, over which jobs, and its progress (live while it runs, with Cancel). */
export function BulkActionPage({ api, id }: { api: Api; id: string }) {
  const polled = useBulkAction(api, id);
  const { data: operation, error, updatedAt } = polled;
  const back = (
    <p>
      <a href={href("/bulk-actions")}>← Bulk actions</a>
    </p>
  );
  if (!operation) {
    return (
      <section>
        {back}
        <Problem error={error} />
        {error ? null : <p class="muted">Loading…</p>}
      </section>
    );
  }
  const search = searchOfFilter(operation.filter);
  return (
    <section data-testid="bulk-action-page">
      {back}
      <header class="page-head">
        <h1>
          {actionLabel(operation)} <Badge value={operation.status} />
        </h1>
        <Updated at={updatedAt} error={error} />
      </header>
      <BulkProgress api={api} polled={polled} />
      <Facts
        items={[
          ["Id", <code>{operation.id}</code>],
          ["Jobs", <span data-testid="bulk-filter">{describeSearch(search)}</span>],
          ["Tenant", operation.tenant ?? "every tenant"],
          ["Requested by", operation.requestedBy ?? "unknown"],
          ["Started", formatTime(operation.createdAt)],
          ["Last batch", formatTime(operation.updatedAt)],
          ["Finished", formatTime(operation.finishedAt)],
          ["Touched", formatNumber(operation.touched)],
          ["Total when it started", operation.total === null ? "unknown" : formatNumber(operation.total)],
        ]}
      />
      <p>
        <a href={href("/jobs", setFields(search))}>The jobs this filter finds now</a>
      </p>
      <h2>Filter as given</h2>
      <JsonBlock value={operation.filter} label="filter" />
    </section>
  );
}
