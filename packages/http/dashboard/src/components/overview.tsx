import { useState } from "preact/hooks";
import { type Api, ApiError } from "../api.js";
import { formatDuration, formatNumber, formatRate } from "../format.js";
import { usePoll } from "../poll.js";
import { href } from "../router.js";
import {
  JOB_STATUSES,
  type JobStatus,
  type OverviewJson,
  type OverviewPart,
  type OverviewQueueJson,
  type QueueList,
  type QueueStatsJson,
  type RecentOutcomesJson,
  type Throughput,
  type WorkerList,
} from "../types.js";
import { ThroughputChart } from "./chart.js";
import { Problem, QueueLink, Updated } from "./common.js";
import { QueueLimits } from "./limits.js";
import { KeyLimitTables, type KeyLimitedQueue, loadKeyLimitedQueues } from "./key-limits.js";
import { ErrorTable, KindTable, LeftOut, OldestReady, Stuck, WorkerTable } from "./overview-parts.js";

/** The overview itself: every part bounded by the server's search time bound, and what an operator watches. */
const REFRESH_MS = 2_000;
/** Queue limits, limits per key and the hour's chart change slowly, and the chart reads a whole hour of attempts. */
const SLOW_REFRESH_MS = 5_000;

/** What each part left out of `incomplete` is, in words. */
const PART_NAMES: Record<OverviewPart, string> = {
  oldestReady: "the oldest ready job and each queue's oldest wait",
  recent: "the recent window (throughput, failure rates, top errors)",
  stuck: "jobs past their lease",
};

interface Glance {
  overview: OverviewJson;
  /** Each live worker's running jobs, by worker id (the overview counts them). */
  runningJobs: Map<string, string[]>;
}

interface Slow {
  /** Each queue's limits, by name. */
  limits: Map<string, QueueStatsJson>;
  minutes: Throughput["minutes"];
  /** null: this key may not read limits per key (tenant keys), or its role is not known yet. */
  keyLimited: KeyLimitedQueue[] | null;
}

/**
 * At a glance (`GET /v1/overview`, every 2 s): per queue its jobs by status
 * (estimates marked "~"), oldest wait, recent throughput and failure rate,
 * and limits; per kind the same; the oldest ready job; jobs past their
 * lease; the most frequent errors, each a link to a search for it; workers
 * and their load; jobs per minute over the hour. A part the server could not
 * read in time is marked, not shown as empty.
 */
export function Overview({ api, admin }: { api: Api; admin: boolean | null }) {
  const glance = usePoll<Glance>(
    async () => {
      const [overview, workers] = await Promise.all([api.get<OverviewJson>("/v1/overview"), api.get<WorkerList>("/v1/workers")]);
      return { overview, runningJobs: new Map(workers.items.map((worker) => [worker.id, worker.runningJobIds])) };
    },
    REFRESH_MS,
    [api],
    "overview",
  );
  const slow = usePoll<Slow>(
    async () => {
      const [queues, throughput, keyLimited] = await Promise.all([
        api.get<QueueList>("/v1/queues"),
        api.get<Throughput>("/v1/stats/throughput"),
        // Admin-only routes: a tenant key (or one not yet known) never calls them.
        admin === true ? loadKeyLimitedQueues(api) : Promise.resolve(null),
      ]);
      return { limits: new Map(queues.items.map((queue) => [queue.queue, queue])), minutes: throughput.minutes, keyLimited };
    },
    SLOW_REFRESH_MS,
    [api, admin],
    "overview-slow",
  );
  const data = glance.data;
  const overview = data?.overview;
  const incomplete = new Set(overview?.incomplete ?? []);
  const windowText = overview ? windowWords(overview.windowMs) : "";
  return (
    <section>
      <header class="page-head">
        <h1>Overview</h1>
        <Updated at={glance.updatedAt} error={glance.error} />
      </header>
      <Problem error={glance.error ?? slow.error} />
      {overview && data ? (
        <>
          {overview.incomplete.length > 0 ? (
            <p class="warning" role="status" data-testid="incomplete">
              Not read within the time bound, so left out: {overview.incomplete.map((part) => PART_NAMES[part]).join("; ")}.
            </p>
          ) : null}
          <h2>Queues</h2>
          <QueueTable
            overview={overview}
            limits={slow.data?.limits ?? null}
            windowText={windowText}
            control={admin === true ? { api, onChanged: () => void Promise.all([glance.refresh(), slow.refresh()]) } : null}
          />
          <div class="glance">
            <div data-testid="oldest-ready" data-incomplete={incomplete.has("oldestReady") || undefined}>
              <h2>Oldest ready job</h2>
              <OldestReady overview={overview} />
            </div>
            <div data-testid="stuck" data-incomplete={incomplete.has("stuck") || undefined}>
              <h2>Past their lease</h2>
              <Stuck stuck={overview.stuck} />
            </div>
          </div>
          <div data-testid="kinds" data-incomplete={incomplete.has("recent") || undefined}>
            <h2>Kinds, {windowText}</h2>
            {incomplete.has("recent") ? <LeftOut /> : <KindTable kinds={overview.kinds} />}
          </div>
          <div data-testid="top-errors" data-incomplete={incomplete.has("recent") || undefined}>
            <h2>Top errors, {windowText}</h2>
            {incomplete.has("recent") ? <LeftOut /> : <ErrorTable errors={overview.topErrors} />}
          </div>
          {slow.data?.keyLimited && slow.data.keyLimited.length > 0 ? (
            <>
              <h2>
                Limits per key <a class="h2-link" href={href("/key-limits")}>all keys and overrides →</a>
              </h2>
              <KeyLimitTables queues={slow.data.keyLimited} />
            </>
          ) : null}
          {slow.data ? (
            <>
              <h2>Jobs per minute</h2>
              <ThroughputChart minutes={slow.data.minutes} />
            </>
          ) : null}
          <h2>Workers</h2>
          <WorkerTable workers={overview.workers} runningJobs={data.runningJobs} />
        </>
      ) : null}
    </section>
  );
}

/** "the last 15 minutes". */
function windowWords(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  return minutes >= 1 ? `the last ${minutes} minute${minutes === 1 ? "" : "s"}` : `the last ${formatDuration(ms)}`;
}

/** A queue's count of one status: a link to those jobs, "~" and an explanation when estimated. */
function CountCell({ queue, status, exactCountLimit }: { queue: OverviewQueueJson; status: JobStatus; exactCountLimit: number }) {
  const count = queue.counts[status];
  const estimated = queue.estimated[status];
  const text = `${estimated ? "~" : ""}${formatNumber(count)}`;
  const title = estimated
    ? count > exactCountLimit
      ? `about ${formatNumber(count)}: estimated from table statistics (more than ${formatNumber(exactCountLimit)}, the most counted one by one)`
      : `about ${formatNumber(count)}: estimated from table statistics (counting ran past its time bound)`
    : undefined;
  if (count === 0 && !estimated) return <span class="muted">0</span>;
  return (
    <a href={href("/jobs", { queue: queue.queue, status })} title={title} class={estimated ? "estimated" : undefined}>
      {text}
    </a>
  );
}

function Recent({ recent }: { recent: RecentOutcomesJson | null }) {
  if (recent === null) return <span class="muted">—</span>;
  return (
    <>
      {formatNumber(recent.succeeded)} ok, {formatNumber(recent.failed)} failed
    </>
  );
}

/** What an admin key may do to a queue from the table: pause or resume it. */
interface QueueControl {
  api: Api;
  onChanged: () => void;
}

function QueueTable({
  overview,
  limits,
  windowText,
  control,
}: {
  overview: OverviewJson;
  limits: Map<string, QueueStatsJson> | null;
  windowText: string;
  control: QueueControl | null;
}) {
  const [problem, setProblem] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  if (overview.queues.length === 0) return <p class="muted">No jobs yet. Enqueue one through the API or `conveyor jobs enqueue`.</p>;
  const toggle = async (queue: string, paused: boolean) => {
    if (!control) return;
    setBusy(queue);
    setProblem(null);
    try {
      await control.api.post(`/v1/queues/${encodeURIComponent(queue)}/${paused ? "resume" : "pause"}`);
    } catch (failure) {
      setProblem(failure instanceof ApiError ? failure : new ApiError(0, "CLIENT", String(failure)));
    } finally {
      setBusy(null);
      control.onChanged();
    }
  };
  return (
    <>
    <Problem error={problem} />
    <div class="table-wrap">
    <table class="data queues sticky-1" data-testid="queues">
      <thead>
        <tr>
          <th>Queue</th>
          {JOB_STATUSES.map((status) => (
            <th key={status} class="num">
              {status}
            </th>
          ))}
          <th class="num">Oldest waiting</th>
          <th title={`attempts that ended in ${windowText}`}>Recent</th>
          <th class="num" title={`failed / ended in ${windowText}`}>Failure rate</th>
          <th>Limits</th>
          {control ? <th>Pause</th> : null}
        </tr>
      </thead>
      <tbody>
        {overview.queues.map((queue) => (
          <tr key={queue.queue} data-queue={queue.queue}>
            <td>
              <QueueLink queue={queue.queue} />
            </td>
            {JOB_STATUSES.map((status) => (
              <td key={status} class="num">
                <CountCell queue={queue} status={status} exactCountLimit={overview.exactCountLimit} />
              </td>
            ))}
            <td class="num">{queue.oldestReadyAgeMs === null ? <span class="muted">—</span> : formatDuration(queue.oldestReadyAgeMs)}</td>
            <td data-testid="recent">
              <Recent recent={queue.recent} />
            </td>
            <td class="num" data-testid="failure-rate">
              {formatRate(queue.recent?.failureRate ?? null)}
            </td>
            <td data-testid="limits">
              <QueueLimits paused={queue.paused} queue={limits?.get(queue.queue) ?? null} />
            </td>
            {control ? (
              <td data-testid="queue-control">
                <button
                  type="button"
                  class="secondary small"
                  disabled={busy === queue.queue}
                  aria-label={`${queue.paused ? "resume" : "pause"} queue ${queue.queue}`}
                  title={
                    queue.paused
                      ? "let workers claim its jobs again (and wake idle ones)"
                      : "stop workers claiming its jobs; they stay queued, and running ones finish"
                  }
                  onClick={() => void toggle(queue.queue, queue.paused)}
                >
                  {queue.paused ? "Resume" : "Pause"}
                </button>
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
    </div>
    </>
  );
}
