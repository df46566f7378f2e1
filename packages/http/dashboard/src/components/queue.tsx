import { useState } from "preact/hooks";
import { type Api, ApiError } from "../api.js";
import { ago, formatDuration, formatNumber, formatRate } from "../format.js";
import { usePoll } from "../poll.js";
import { href } from "../router.js";
import {
  JOB_STATUSES,
  type KeyLimitJson,
  type KeyLimitList,
  type OverviewJson,
  type OverviewQueueJson,
  type QueueList,
  type QueueStatsJson,
  type Throughput,
  type TopKeys,
  type WorkerList,
} from "../types.js";
import { ThroughputChart } from "./chart.js";
import { Badge, Facts, IdLink, Problem, Updated } from "./common.js";
import { type KeyLimitedQueue, KeyLimitTables, KeyOverrides } from "./key-limits.js";
import { describeLimits, limitParts } from "./limits.js";
import { WorkerTable } from "./overview-parts.js";

/** Counts, the recent window, the oldest ready job and the workers: read as often as the overview reads them. */
const REFRESH_MS = 2_000;
/** Limits and the hour's chart change slowly, and the chart reads an hour of attempts. */
const SLOW_REFRESH_MS = 5_000;
/** The keys listed as the busiest. */
const TOP_KEYS = 10;

interface Glance {
  /** The queue as the overview has it; null when the overview lists no such queue (no jobs, no settings). */
  queue: OverviewQueueJson | null;
  overview: OverviewJson;
  /** Each live worker's running jobs, by worker id. */
  runningJobs: Map<string, string[]>;
}

interface Slow {
  /** The queue's limits; null when `GET /v1/queues` does not list it. */
  limits: QueueStatsJson | null;
  minutes: Throughput["minutes"];
  /** Its limits per key with the busiest keys; null when it has none, or the key may not read them (tenant keys). */
  keyLimited: KeyLimitedQueue | null;
}

/** The queue's limits per key and its busiest keys, or null when it has none (admin keys only: callers check the role first). */
async function loadKeyLimits(api: Api, queue: string): Promise<KeyLimitedQueue | null> {
  const path = `/v1/queues/${encodeURIComponent(queue)}`;
  const limits = await api.get<KeyLimitList>(`${path}/key-limits`);
  const defaults = limits.items.find((item) => item.key === null);
  if (!defaults) return null;
  const overridden: KeyLimitJson[] = limits.items.filter((item) => item.key !== null);
  const top = (await api.get<TopKeys>(`${path}/keys?limit=${TOP_KEYS}`)).items;
  return { queue, defaults, overrides: overridden.length, overridden, top };
}

/**
 * One queue (`#/queues/<name>`): its jobs by state (each a link to them),
 * its recent throughput and failure rate with the hour's chart, its limits
 * and, for admin keys, its limits per key with the busiest keys and Pause or
 * Resume; the workers that serve it and its oldest ready job.
 */
export function QueuePage({ api, name, admin }: { api: Api; name: string; admin: boolean | null }) {
  const glance = usePoll<Glance>(
    async () => {
      const [overview, workers] = await Promise.all([api.get<OverviewJson>("/v1/overview"), api.get<WorkerList>("/v1/workers")]);
      return {
        overview,
        queue: overview.queues.find((queue) => queue.queue === name) ?? null,
        runningJobs: new Map(workers.items.map((worker) => [worker.id, worker.runningJobIds])),
      };
    },
    REFRESH_MS,
    [api, name],
    "queue",
  );
  const slow = usePoll<Slow>(
    async () => {
      const [queues, throughput, keyLimited] = await Promise.all([
        api.get<QueueList>("/v1/queues"),
        api.get<Throughput>(`/v1/stats/throughput?queue=${encodeURIComponent(name)}`),
        // Admin-only routes: a tenant key (or one not yet known) never calls them.
        admin === true ? loadKeyLimits(api, name) : Promise.resolve(null),
      ]);
      return { limits: queues.items.find((queue) => queue.queue === name) ?? null, minutes: throughput.minutes, keyLimited };
    },
    SLOW_REFRESH_MS,
    [api, name, admin],
    "queue-slow",
  );
  const data = glance.data;
  const queue = data?.queue ?? null;
  const overview = data?.overview;
  const windowText = overview ? `the last ${Math.round(overview.windowMs / 60_000)} minutes` : "";
  const serving = overview?.workers.filter((worker) => worker.queues === null || worker.queues.includes(name)) ?? [];
  const refreshAll = () => void Promise.all([glance.refresh(), slow.refresh()]);
  return (
    <section data-testid="queue-page" data-queue={name}>
      <p>
        <a href={href("/")}>← Overview</a>
      </p>
      <header class="page-head">
        <h1>
          Queue <code>{name}</code> {queue?.paused ? <Badge value="paused" /> : null}
        </h1>
        <Updated at={glance.updatedAt} error={glance.error} />
      </header>
      <Problem error={glance.error ?? slow.error} />
      {data && queue === null ? (
        <p class="muted" data-testid="queue-unknown">
          No jobs are in this queue{admin === true ? ", and it has no settings" : ""}.{" "}
          <a href={href("/jobs", { queue: name })}>Search its jobs</a> anyway.
        </p>
      ) : null}
      {admin === true && data ? <PauseButton api={api} queue={name} paused={queue?.paused ?? false} onChanged={refreshAll} /> : null}
      {queue && overview ? (
        <>
          <h2>
            Jobs by state <a class="h2-link" href={href("/jobs", { queue: name })}>all its jobs →</a>
          </h2>
          <Counts queue={queue} />
          <h2>Throughput, {windowText}</h2>
          {overview.incomplete.includes("recent") || queue.recent === null ? (
            <p class="muted">Not read within the time bound; shown again when a refresh reads it in time.</p>
          ) : (
            <Facts
              items={[
                ["Succeeded", <span data-testid="queue-succeeded">{formatNumber(queue.recent.succeeded)}</span>],
                ["Failed", <span data-testid="queue-failed">{formatNumber(queue.recent.failed)}</span>],
                ["Failure rate", <span data-testid="queue-failure-rate">{formatRate(queue.recent.failureRate)}</span>],
              ]}
            />
          )}
          <h2>Oldest ready job</h2>
          <OldestReady queue={queue} overview={overview} />
        </>
      ) : null}
      {slow.data ? (
        <>
          <h2>Jobs per minute</h2>
          <ThroughputChart minutes={slow.data.minutes} />
          <h2>Limits</h2>
          <p data-testid="queue-limits-text">
            {slow.data.limits && limitParts(slow.data.limits).length > 0 ? (
              <>
                Across all workers: <strong>{describeLimits(slow.data.limits)}</strong>.
              </>
            ) : (
              <span class="muted">No cap on jobs running at once, no rate limit.</span>
            )}
          </p>
          {slow.data.keyLimited ? (
            <div data-testid="queue-key-limits">
              <h2>
                Limits per key <a class="h2-link" href={href("/key-limits")}>every queue's →</a>
              </h2>
              <p data-testid="key-default">
                Every key: <strong>{describeLimits(slow.data.keyLimited.defaults)}</strong>{" "}
                <span class="muted">(set {ago(slow.data.keyLimited.defaults.updatedAt)})</span>
              </p>
              <h3>Overrides</h3>
              <KeyOverrides overridden={slow.data.keyLimited.overridden} />
              <h3>Busiest keys</h3>
              <KeyLimitTables queues={[slow.data.keyLimited]} summary={false} />
            </div>
          ) : slow.data.limits?.keyLimits && admin !== true ? (
            <p data-testid="key-default">
              Per key: <strong>{describeLimits(slow.data.limits.keyLimits)}</strong>{" "}
              <span class="muted">(overrides and the busiest keys: admin keys only)</span>
            </p>
          ) : (
            <p class="muted">No limits per key.</p>
          )}
        </>
      ) : null}
      {data ? (
        <>
          <h2>Workers serving it</h2>
          {serving.length === 0 ? (
            <p class="muted" data-testid="no-workers">
              No live worker serves this queue: its jobs wait until one starts.
            </p>
          ) : (
            <WorkerTable workers={serving} runningJobs={data.runningJobs} />
          )}
        </>
      ) : null}
    </section>
  );
}

/** Its jobs by state, each a link to them; "~" marks an estimate. */
function Counts({ queue }: { queue: OverviewQueueJson }) {
  return (
    <dl class="facts counts" data-testid="queue-counts">
      {JOB_STATUSES.map((status) => (
        <div key={status} data-status={status}>
          <dt>{status}</dt>
          <dd>
            {queue.counts[status] === 0 && !queue.estimated[status] ? (
              <span class="muted">0</span>
            ) : (
              <a href={href("/jobs", { queue: queue.queue, status })} class={queue.estimated[status] ? "estimated" : undefined}>
                {queue.estimated[status] ? "~" : ""}
                {formatNumber(queue.counts[status])}
              </a>
            )}
          </dd>
        </div>
      ))}
    </dl>
  );
}

function OldestReady({ queue, overview }: { queue: OverviewQueueJson; overview: OverviewJson }) {
  if (overview.incomplete.includes("oldestReady")) return <p class="muted">Not read within the time bound; shown again when a refresh reads it in time.</p>;
  const job = queue.oldestReadyJob;
  if (job === null) return <p class="muted">No job of this queue is waiting to run.</p>;
  return (
    <p data-testid="queue-oldest-ready">
      <IdLink path="/jobs" id={job.id} /> {job.kind} (tenant {job.tenant}) has waited <strong>{formatDuration(job.ageMs)}</strong>.
    </p>
  );
}

/**
 * Pause or Resume a queue (admin keys): a paused queue's jobs stay queued
 * and running ones finish; resuming wakes idle workers. `onChanged` hears
 * that it was pressed, whatever the answer, to read the queue again.
 */
export function PauseButton({
  api,
  queue,
  paused,
  onChanged,
  small = false,
}: {
  api: Api;
  queue: string;
  paused: boolean;
  onChanged: () => void;
  small?: boolean;
}) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ApiError | null>(null);
  const toggle = async () => {
    setBusy(true);
    setProblem(null);
    try {
      await api.post(`/v1/queues/${encodeURIComponent(queue)}/${paused ? "resume" : "pause"}`);
    } catch (failure) {
      setProblem(failure instanceof ApiError ? failure : new ApiError(0, "CLIENT", String(failure)));
    } finally {
      setBusy(false);
      onChanged();
    }
  };
  return (
    <>
      <button
        type="button"
        class={small ? "secondary small" : "secondary"}
        disabled={busy}
        aria-label={`${paused ? "resume" : "pause"} queue ${queue}`}
        title={paused ? "let workers claim its jobs again (and wake idle ones)" : "stop workers claiming its jobs; they stay queued, and running ones finish"}
        onClick={() => void toggle()}
      >
        {paused ? "Resume" : "Pause"}
      </button>
      <Problem error={problem} />
    </>
  );
}
