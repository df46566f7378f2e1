import { useState } from "preact/hooks";
import { type Api, ApiError, query } from "../api.js";
import { ago, formatTime } from "../format.js";
import { usePoll } from "../poll.js";
import { href, navigate, type Route } from "../router.js";
import type { DeadLetterJson, DeadLetterPage } from "../types.js";
import { Facts, IdLink, JsonBlock, Notice, Problem, QueueLink, StoredError, Updated } from "./common.js";
import { Timeline } from "./timeline.js";

const REFRESH_MS = 3_000;

/** The dead-letter queue, newest first. */
export function DeadLetters({ api, route }: { api: Api; route: Route }) {
  const kind = route.params.get("kind") ?? "";
  const cursor = route.params.get("cursor") ?? "";
  const { data, error, updatedAt } = usePoll(
    () => api.get<DeadLetterPage>(`/v1/dead-letters${query({ kind, cursor, limit: 50 })}`),
    REFRESH_MS,
    [api, kind, cursor],
    "dead-letters",
  );
  return (
    <section>
      <header class="page-head">
        <h1>Dead letters{kind ? ` of ${kind}` : ""}</h1>
        <Updated at={updatedAt} error={error} />
      </header>
      {kind ? (
        <p>
          <a href={href("/dead-letters")}>Show every kind</a>
        </p>
      ) : null}
      <Problem error={error} />
      {data && data.items.length === 0 ? <p class="muted">The dead-letter queue is empty.</p> : null}
      {data && data.items.length > 0 ? (
        <div class="table-wrap">
        <table class="data" data-testid="dead-letters">
          <thead>
            <tr>
              <th>Entry</th>
              <th>Kind</th>
              <th>Queue</th>
              <th>Tenant</th>
              <th>Reason</th>
              <th>Last error</th>
              <th class="num">Attempts</th>
              <th>Dead</th>
            </tr>
          </thead>
          <tbody>
            {data.items.map((entry) => (
              <tr key={entry.id} data-dead-letter-id={entry.id} data-job-id={entry.jobId}>
                <td>
                  <IdLink path="/dead-letters" id={entry.id} />
                </td>
                <td>{entry.kind}</td>
                <td>
                  <QueueLink queue={entry.queue} />
                </td>
                <td>{entry.tenant}</td>
                <td>{entry.reason.replace("_", " ")}</td>
                <td class="clip">
                  <StoredError error={entry.lastError} />
                </td>
                <td class="num">
                  {entry.attempts} / {entry.maxAttempts}
                </td>
                <td title={entry.deadAt ?? undefined}>{ago(entry.deadAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      ) : null}
      <nav class="pager">
        {cursor ? <a href={href("/dead-letters", { kind })}>← Newest</a> : null}
        {data?.nextCursor ? <a href={href("/dead-letters", { kind, cursor: data.nextCursor })}>Older →</a> : null}
      </nav>
    </section>
  );
}

/** One dead letter: payload, last error, the whole history; requeue or purge. */
export function DeadLetterPage({ api, id }: { api: Api; id: string }) {
  const path = `/v1/dead-letters/${encodeURIComponent(id)}`;
  const { data: entry, error } = usePoll(() => api.get<DeadLetterJson>(path), 10_000, [api, id], "dead-letter");
  const [failure, setFailure] = useState<string | null>(null);
  const [confirmingPurge, setConfirmingPurge] = useState(false);
  const [busy, setBusy] = useState(false);

  const act = async (work: () => Promise<void>) => {
    setBusy(true);
    setFailure(null);
    try {
      await work();
    } catch (problem) {
      setFailure(problem instanceof ApiError ? problem.message : String(problem));
    } finally {
      setBusy(false);
    }
  };
  const requeue = () =>
    act(async () => {
      await api.post(`${path}/requeue`);
      navigate(href(`/jobs/${entry!.jobId}`));
    });
  const purge = () =>
    act(async () => {
      await api.delete(path);
      navigate(href("/dead-letters"));
    });

  if (!entry) {
    return (
      <section>
        <p>
          <a href={href("/dead-letters")}>← Dead letters</a>
        </p>
        <Problem error={error} />
        {error ? null : <p class="muted">Loading…</p>}
      </section>
    );
  }
  return (
    <section data-testid="dead-letter-page">
      <p>
        <a href={href("/dead-letters")}>← Dead letters</a>
      </p>
      <header class="page-head">
        <h1>Dead letter: {entry.kind}</h1>
      </header>
      {failure ? <Notice kind="error">{failure}</Notice> : null}
      <div class="actions">
        <button type="button" disabled={busy} onClick={requeue}>
          Requeue
        </button>
        {confirmingPurge ? (
          <>
            <button type="button" class="danger" disabled={busy} onClick={purge}>
              Purge for good
            </button>
            <button type="button" disabled={busy} onClick={() => setConfirmingPurge(false)}>
              Keep it
            </button>
          </>
        ) : (
          <button type="button" class="danger" disabled={busy} onClick={() => setConfirmingPurge(true)}>
            Purge
          </button>
        )}
      </div>
      <Facts
        items={[
          ["Job", <a href={href(`/jobs/${entry.jobId}`)}><code>{entry.jobId}</code></a>],
          ["Tenant", entry.tenant],
          ["Queue", <QueueLink queue={entry.queue} />],
          ["Reason", entry.reason.replace("_", " ")],
          ["Attempts", `${entry.attempts} / ${entry.maxAttempts}`],
          ["Dead since", formatTime(entry.deadAt)],
          ["Last error", <StoredError error={entry.lastError} />],
        ]}
      />
      <h2>Payload</h2>
      <JsonBlock value={entry.payload} label="payload" />
      <h2>History</h2>
      <Timeline attempts={entry.history} />
    </section>
  );
}
