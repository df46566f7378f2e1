import { ago, formatDuration, formatNumber, formatRate, shortId } from "../format.js";
import { href } from "../router.js";
import { IdLink, QueueLink } from "./common.js";
import { errorSearchText } from "../search.js";
import type { ErrorGroupJson, OverviewJson, OverviewKindJson, OverviewWorkerJson, StuckJson } from "../types.js";

// The overview's parts below the queues: each renders one part of
// `GET /v1/overview`, and says so when the server left it out (not read
// within the time bound) rather than showing it empty.

/** A part the server left out. */
export function LeftOut() {
  return <p class="muted">Not read within the time bound; shown again when a refresh reads it in time.</p>;
}

export function OldestReady({ overview }: { overview: OverviewJson }) {
  if (overview.incomplete.includes("oldestReady")) return <LeftOut />;
  const job = overview.oldestReadyJob;
  if (job === null) return <p class="muted">No job is waiting to run.</p>;
  return (
    <p>
      <IdLink path="/jobs" id={job.id} />{" "}
      {job.kind} in queue <QueueLink queue={job.queue} /> (tenant {job.tenant}) has waited <strong>{formatDuration(job.ageMs)}</strong>.
    </p>
  );
}

export function Stuck({ stuck }: { stuck: StuckJson | null }) {
  if (stuck === null) return <LeftOut />;
  if (stuck.count === 0) return <p class="muted">None: every running job's worker renews its lease.</p>;
  return (
    <>
      <p>
        <strong data-testid="stuck-count">
          {stuck.estimated ? "more than " : ""}
          {formatNumber(stuck.count)}
        </strong>{" "}
        running job{stuck.count === 1 ? "" : "s"} whose worker stopped renewing the lease (crashed, paused, cut off); a worker's reclaimer hands
        them back.
      </p>
      <div class="table-wrap">
        <table class="data">
          <thead>
            <tr>
              <th>Job</th>
              <th>Kind</th>
              <th>Queue</th>
              <th>Worker</th>
              <th>Lease expired</th>
            </tr>
          </thead>
          <tbody>
            {stuck.jobs.map((job) => (
              <tr key={job.id} data-job-id={job.id}>
                <td>
                  <IdLink path="/jobs" id={job.id} />
                </td>
                <td>{job.kind}</td>
                <td>
                  <QueueLink queue={job.queue} />
                </td>
                <td>
                  <code>{job.workerId}</code>
                </td>
                <td>{formatDuration(job.expiredMs)} ago</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

export function KindTable({ kinds }: { kinds: OverviewKindJson[] }) {
  if (kinds.length === 0) return <p class="muted">No attempt ended.</p>;
  return (
    <div class="table-wrap">
      <table class="data">
        <thead>
          <tr>
            <th>Kind</th>
            <th class="num">Succeeded</th>
            <th class="num">Failed</th>
            <th class="num">Failure rate</th>
          </tr>
        </thead>
        <tbody>
          {kinds.map((kind) => (
            <tr key={kind.kind} data-kind={kind.kind}>
              <td>
                <a href={href("/jobs", { kind: kind.kind })}>{kind.kind}</a>
              </td>
              <td class="num">{formatNumber(kind.succeeded)}</td>
              <td class="num">{formatNumber(kind.failed)}</td>
              <td class="num">{formatRate(kind.failureRate)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function ErrorTable({ errors }: { errors: ErrorGroupJson[] }) {
  if (errors.length === 0) return <p class="muted">No attempt failed.</p>;
  // "stack": on a narrow screen each error is a card of labelled lines (styles.css), so long messages wrap instead of scrolling.
  return (
    <div class="table-wrap">
      <table class="data stack">
        <thead>
          <tr>
            <th>Message</th>
            <th class="num">Attempts</th>
            <th>Kinds</th>
            <th>Last seen</th>
          </tr>
        </thead>
        <tbody>
          {errors.map((group) => (
            <tr key={group.message}>
              <td class="message" data-label="Message">
                {errorSearchText(group.message) === "" ? (
                  <span class="muted">(no message)</span>
                ) : (
                  <a href={href("/jobs", { error: errorSearchText(group.message) })} title="jobs whose last error contains this text">
                    {group.message}
                  </a>
                )}
              </td>
              <td class="num" data-label="Attempts">
                {formatNumber(group.count)}
              </td>
              <td data-label="Kinds">{group.kinds.join(", ")}</td>
              <td data-label="Last seen">{ago(group.lastSeenAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A worker's load: running / concurrency, as text and a meter. */
function Load({ worker }: { worker: OverviewWorkerJson }) {
  return (
    <span class="load">
      <meter min={0} max={Math.max(1, worker.concurrency)} value={worker.running} high={Math.max(1, worker.concurrency) * 0.9} aria-hidden="true" />
      {worker.running} / {worker.concurrency}
    </span>
  );
}

/** Live workers with their load (from the overview) and the jobs each runs now (from `GET /v1/workers`, read beside it). */
export function WorkerTable({ workers, runningJobs }: { workers: OverviewWorkerJson[]; runningJobs: Map<string, string[]> }) {
  if (workers.length === 0) return <p class="muted">No live workers. Start one with `conveyor worker --jobs …`.</p>;
  return (
    <div class="table-wrap">
    <table class="data" data-testid="workers">
      <thead>
        <tr>
          <th>Worker</th>
          <th>Host / pid</th>
          <th>Queues</th>
          <th>Load</th>
          <th>Running jobs</th>
          <th>Last seen</th>
        </tr>
      </thead>
      <tbody>
        {workers.map((worker) => {
          const jobs = runningJobs.get(worker.id) ?? [];
          return (
            <tr key={worker.id} data-worker-id={worker.id}>
              <td>
                <code>{worker.id}</code>
              </td>
              <td>
                {worker.hostname} / {worker.pid}
              </td>
              <td>
                {worker.queues ? (
                  worker.queues.map((queue, index) => [index > 0 ? ", " : null, <QueueLink key={queue} queue={queue} />])
                ) : (
                  <span class="muted">all</span>
                )}
              </td>
              <td data-testid="load">
                <Load worker={worker} />
              </td>
              <td>
                {jobs.length === 0 ? (
                  <span class="muted">{worker.running === 0 ? "idle" : "—"}</span>
                ) : (
                  jobs.map((id) => (
                    <a key={id} class="chip" href={href(`/jobs/${id}`)}>
                      {shortId(id)}
                    </a>
                  ))
                )}
              </td>
              <td>{ago(worker.lastSeenAt)}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
    </div>
  );
}
