import { useEffect, useState } from "preact/hooks";
import { type Api, ApiError, query } from "../api.js";
import { ago, formatJobCount } from "../format.js";
import { usePoll } from "../poll.js";
import { href, navigate, type Route } from "../router.js";
import { checkSearch, isCostly, type Search, searchOf, setFields } from "../search.js";
import type { BulkActionKind, JobCount, JobJson, JobPage, QueueList } from "../types.js";
import { BulkBar, BulkDialog } from "./bulk-confirm.js";
import { FollowBulkAction } from "./bulk-progress.js";
import { Badge, Due, IdLink, Problem, QueueLink, StoredError, Updated } from "./common.js";
import { JobFilters } from "./job-filters.js";
import { SelectionBar } from "./job-selection.js";
import { ProgressHint } from "./job-output.js";

const REFRESH_MS = 2_000;
/** Counting reads up to 10,000 rows before it estimates: less often than the list. */
const COUNT_REFRESH_MS = 10_000;
const PAGE_SIZE = 50;

/**
 * Jobs, newest first, found by every search field (kept in the URL, so a
 * search can be shared), with how many match and bulk actions over them.
 * The list refreshes every 2 s and the count every 10 s, except for a
 * search by payload or error text, which reads rows no index serves: it
 * runs once and again on Refresh. A search that ran out of time is not
 * repeated on its own either: it would run out again.
 */
export function Jobs({ api, route }: { api: Api; route: Route }) {
  const search = searchOf(route.params);
  const cursor = route.params.get("cursor") ?? "";
  const fields = setFields(search);
  const searchKey = JSON.stringify(fields);
  const problems = checkSearch(search);
  const invalid = problems.length > 0 ? new ApiError(0, "FILTER", problems.join(" ")) : null;
  const costly = isCostly(search);
  const [timedOut, setTimedOut] = useState(false);

  const list = usePoll<JobPage | null>(
    async () => (invalid ? null : api.get<JobPage>(`/v1/jobs${query({ ...fields, cursor, limit: PAGE_SIZE })}`)),
    invalid || costly || timedOut ? null : REFRESH_MS,
    [api, searchKey, cursor],
    "jobs",
  );
  const count = usePoll<JobCount | null>(
    async () => (invalid ? null : api.get<JobCount>(`/v1/jobs/count${query(fields)}`)),
    invalid || costly || timedOut ? null : COUNT_REFRESH_MS,
    [api, searchKey],
    "jobs-count",
  );
  useEffect(() => setTimedOut(list.error?.code === "SEARCH_TIMEOUT"), [list.error]);

  // Ticked rows, by id: a new search or page starts with none.
  const [ticked, setTicked] = useState<ReadonlySet<string>>(new Set());
  useEffect(() => setTicked(new Set()), [searchKey, cursor]);
  const [choosing, setChoosing] = useState<BulkActionKind | null>(null);
  const [running, setRunning] = useState<string | null>(null);
  const choices = useChoices(api);
  const apply = (next: Search) => navigate(href("/jobs", setFields(next)));
  const refresh = () => {
    void list.refresh();
    void count.refresh();
  };
  const error = invalid ?? list.error ?? count.error;
  const data = list.data;
  return (
    <section>
      <header class="page-head">
        <h1>Jobs</h1>
        <Updated at={list.updatedAt} error={error} />
      </header>
      <JobFilters search={search} choices={choices} onApply={apply} />
      <Problem error={error} />
      {timedOut ? <p class="muted">Not refreshed on its own: the same search would run out of time again. Narrow it, or press Refresh.</p> : null}
      <div class="result-bar">
        <span class="match-count" data-testid="match-count" title={count.data?.estimated ? "estimated from table statistics: more than 10,000 match, or counting ran out of time" : undefined}>
          {count.data ? formatJobCount(count.data.count, count.data.estimated) : invalid || count.error ? "" : "counting…"}
        </span>
        <button type="button" class="secondary" onClick={refresh}>
          Refresh
        </button>
        {costly ? <span class="muted">Payload and error-text searches run when asked (Refresh), not every 2 s.</span> : null}
      </div>
      <BulkBar disabled={invalid !== null} onChoose={(action) => setChoosing(action)} />
      {choosing ? (
        <BulkDialog
          key={`${choosing}|${searchKey}`}
          api={api}
          search={search}
          action={choosing}
          onClose={() => setChoosing(null)}
          onStarted={(operation) => {
            setChoosing(null);
            setRunning(operation.id);
          }}
        />
      ) : null}
      {running ? <FollowBulkAction key={running} api={api} id={running} onEnd={refresh} onClose={() => setRunning(null)} /> : null}
      <SelectionBar
        api={api}
        selected={data ? data.items.filter((job) => ticked.has(job.id)) : []}
        onClear={() => setTicked(new Set())}
        onDone={() => {
          setTicked(new Set());
          refresh();
        }}
      />
      {data ? <JobTable jobs={data.items} ticked={ticked} onTick={setTicked} /> : null}
      <nav class="pager">
        {cursor ? <a href={href("/jobs", fields)}>← Newest</a> : null}
        {data?.nextCursor ? <a href={href("/jobs", { ...fields, cursor: data.nextCursor })}>Older →</a> : null}
      </nav>
    </section>
  );
}

/** The jobs of a page, each with a box to tick it for the selection's actions; the head's box ticks the whole page. */
function JobTable({ jobs, ticked, onTick }: { jobs: JobJson[]; ticked: ReadonlySet<string>; onTick: (next: ReadonlySet<string>) => void }) {
  if (jobs.length === 0) return <p class="muted">No jobs match.</p>;
  const onPage = jobs.filter((job) => ticked.has(job.id)).length;
  const tick = (id: string, on: boolean) => {
    const next = new Set(ticked);
    if (on) next.add(id);
    else next.delete(id);
    onTick(next);
  };
  return (
    <div class="table-wrap">
    <table class="data sticky-2" data-testid="jobs">
      <thead>
        <tr>
          <th class="select">
            <input
              type="checkbox"
              aria-label="select every job on this page"
              checked={onPage === jobs.length}
              indeterminate={onPage > 0 && onPage < jobs.length}
              onChange={(event) => onTick(event.currentTarget.checked ? new Set(jobs.map((job) => job.id)) : new Set())}
            />
          </th>
          <th>Job</th>
          <th>Kind</th>
          <th>Queue</th>
          <th>Tenant</th>
          <th>Status</th>
          <th class="num" title="lower runs first (-1000..1000)">Priority</th>
          <th class="num">Attempts</th>
          <th>Last error</th>
          <th>Created</th>
        </tr>
      </thead>
      <tbody>
        {jobs.map((job) => (
          <tr key={job.id} data-job-id={job.id} class={ticked.has(job.id) ? "ticked" : undefined}>
            <td class="select">
              <input
                type="checkbox"
                aria-label={`select job ${job.id}`}
                checked={ticked.has(job.id)}
                onChange={(event) => tick(job.id, event.currentTarget.checked)}
              />
            </td>
            <td>
              <IdLink path="/jobs" id={job.id} />
            </td>
            <td>{job.kind}</td>
            <td>
              <QueueLink queue={job.queue} />
            </td>
            <td>{job.tenant}</td>
            <td>
              <Badge value={job.status} />
              <Due job={job} />
              <ProgressHint job={job} />
            </td>
            <td class="num" data-testid="priority">
              {job.priority}
            </td>
            <td class="num">
              {job.attempts} / {job.maxAttempts}
            </td>
            <td class="clip" data-testid="last-error">
              <StoredError error={job.lastError} />
            </td>
            <td title={job.createdAt ?? undefined}>{ago(job.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}

/** Kinds (from the OpenAPI document's create-job body) and queues (that have jobs), for the filters. */
function useChoices(api: Api): { kinds: string[]; queues: string[] } {
  const [choices, setChoices] = useState<{ kinds: string[]; queues: string[] }>({ kinds: [], queues: [] });
  useEffect(() => {
    let live = true;
    void (async () => {
      const [kinds, queues] = await Promise.all([
        fetch("/openapi.json")
          .then((response) => response.json())
          .then((document: any) => {
            const values = document?.paths?.["/v1/jobs"]?.post?.requestBody?.content?.["application/json"]?.schema?.properties?.kind?.enum;
            return Array.isArray(values) ? values.filter((value): value is string => typeof value === "string") : [];
          })
          .catch(() => [] as string[]),
        api
          .get<QueueList>("/v1/queues")
          .then((answer) => answer.items.map((item) => item.queue))
          .catch(() => [] as string[]),
      ]);
      if (live) setChoices({ kinds, queues });
    })();
    return () => {
      live = false;
    };
  }, [api]);
  return choices;
}
