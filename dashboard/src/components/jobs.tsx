import { useEffect, useState } from "preact/hooks";
import { type Api, query } from "../api.js";
import { ago, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { href, navigate, type Route } from "../router.js";
import { JOB_STATUSES, type JobJson, type JobPage, type QueueList } from "../types.js";
import { Badge, Problem, StoredError, Updated } from "./common.js";
import { ProgressHint } from "./job-output.js";

const REFRESH_MS = 2_000;
const PAGE_SIZE = 50;

/** Jobs, newest first, filtered by status, kind, queue and tenant (kept in the URL); refreshed every 2 s. */
export function Jobs({ api, route }: { api: Api; route: Route }) {
  const filter = {
    status: route.params.get("status") ?? "",
    kind: route.params.get("kind") ?? "",
    queue: route.params.get("queue") ?? "",
    tenant: route.params.get("tenant") ?? "",
    cursor: route.params.get("cursor") ?? "",
  };
  const { data, error, updatedAt } = usePoll(
    () =>
      api.get<JobPage>(
        `/v1/jobs${query({ status: filter.status, kind: filter.kind, queue: filter.queue, tenant: filter.tenant, cursor: filter.cursor, limit: PAGE_SIZE })}`,
      ),
    REFRESH_MS,
    [api, filter.status, filter.kind, filter.queue, filter.tenant, filter.cursor],
  );
  const choices = useChoices(api);
  const apply = (change: Partial<typeof filter>) => {
    const next = { ...filter, cursor: "", ...change };
    navigate(href("/jobs", next));
  };
  return (
    <section>
      <header class="page-head">
        <h1>Jobs</h1>
        <Updated at={updatedAt} error={error} />
      </header>
      <form class="filters" onSubmit={(event) => event.preventDefault()} aria-label="filters">
        <label>
          Status
          <select name="status" value={filter.status} onChange={(event) => apply({ status: event.currentTarget.value })}>
            <option value="">any</option>
            {JOB_STATUSES.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <input
            name="kind"
            list="kinds"
            value={filter.kind}
            placeholder="any"
            onChange={(event) => apply({ kind: event.currentTarget.value.trim() })}
          />
          <datalist id="kinds">
            {choices.kinds.map((kind) => (
              <option key={kind} value={kind} />
            ))}
          </datalist>
        </label>
        <label>
          Queue
          <select name="queue" value={filter.queue} onChange={(event) => apply({ queue: event.currentTarget.value })}>
            <option value="">any</option>
            {[...new Set([...choices.queues, ...(filter.queue ? [filter.queue] : [])])].map((queue) => (
              <option key={queue} value={queue}>
                {queue}
              </option>
            ))}
          </select>
        </label>
        <label>
          Tenant
          <input
            name="tenant"
            value={filter.tenant}
            placeholder="any"
            onChange={(event) => apply({ tenant: event.currentTarget.value.trim() })}
          />
        </label>
        {filter.status || filter.kind || filter.queue || filter.tenant ? (
          <a class="button-link" href={href("/jobs")}>
            Clear filters
          </a>
        ) : null}
      </form>
      <Problem error={error} />
      {data ? <JobTable jobs={data.items} /> : null}
      <nav class="pager">
        {filter.cursor ? <a href={href("/jobs", { ...filter, cursor: "" })}>← Newest</a> : null}
        {data?.nextCursor ? <a href={href("/jobs", { ...filter, cursor: data.nextCursor })}>Older →</a> : null}
      </nav>
    </section>
  );
}

function JobTable({ jobs }: { jobs: JobJson[] }) {
  if (jobs.length === 0) return <p class="muted">No jobs match.</p>;
  return (
    <div class="table-wrap">
    <table class="data" data-testid="jobs">
      <thead>
        <tr>
          <th>Job</th>
          <th>Kind</th>
          <th>Queue</th>
          <th>Tenant</th>
          <th>Status</th>
          <th class="num">Attempts</th>
          <th>Last error</th>
          <th>Created</th>
        </tr>
      </thead>
      <tbody>
        {jobs.map((job) => (
          <tr key={job.id} data-job-id={job.id}>
            <td>
              <a href={href(`/jobs/${job.id}`)}>
                <code>{shortId(job.id)}</code>
              </a>
            </td>
            <td>{job.kind}</td>
            <td>{job.queue}</td>
            <td>{job.tenant}</td>
            <td>
              <Badge value={job.status} />
              <ProgressHint job={job} />
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
