import type { Api } from "../api.js";
import { ago, formatDuration, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { href } from "../router.js";
import { JOB_STATUSES, type QueueList, type QueueStatsJson, type Throughput, type ThroughputMinuteJson, type WorkerJson, type WorkerList } from "../types.js";
import { ThroughputChart } from "./chart.js";
import { Badge, Problem, Updated } from "./common.js";
import { KeyLimitTables, type KeyLimitedQueue, loadKeyLimitedQueues } from "./key-limits.js";

const REFRESH_MS = 2_000;

interface OverviewData {
  queues: QueueStatsJson[];
  workers: WorkerJson[];
  minutes: ThroughputMinuteJson[];
  /** null: this key may not read limits per key (tenant keys). */
  keyLimited: KeyLimitedQueue[] | null;
}

/** Queues with counts by status and their limits (paused too), limits per key with the busiest keys (admin keys), jobs per minute, and live workers; refreshed every 2 s. */
export function Overview({ api }: { api: Api }) {
  const { data, error, updatedAt } = usePoll<OverviewData>(
    async () => {
      const [queues, workers, throughput, keyLimited] = await Promise.all([
        api.get<QueueList>("/v1/queues"),
        api.get<WorkerList>("/v1/workers"),
        api.get<Throughput>("/v1/stats/throughput"),
        loadKeyLimitedQueues(api),
      ]);
      return { queues: queues.items, workers: workers.items, minutes: throughput.minutes, keyLimited };
    },
    REFRESH_MS,
    [api],
  );
  return (
    <section>
      <header class="page-head">
        <h1>Overview</h1>
        <Updated at={updatedAt} error={error} />
      </header>
      <Problem error={error} />
      {data ? (
        <>
          <h2>Queues</h2>
          <QueueTable queues={data.queues} />
          {data.keyLimited !== null && data.keyLimited.length > 0 ? (
            <>
              <h2>Limits per key</h2>
              <KeyLimitTables queues={data.keyLimited} />
            </>
          ) : null}
          <h2>Jobs per minute</h2>
          <ThroughputChart minutes={data.minutes} />
          <h2>Workers</h2>
          <WorkerTable workers={data.workers} />
        </>
      ) : null}
    </section>
  );
}

function QueueTable({ queues }: { queues: QueueStatsJson[] }) {
  if (queues.length === 0) return <p class="muted">No jobs yet. Enqueue one through the API or `conveyor jobs enqueue`.</p>;
  return (
    <div class="table-wrap">
    <table class="data" data-testid="queues">
      <thead>
        <tr>
          <th>Queue</th>
          {JOB_STATUSES.map((status) => (
            <th key={status} class="num">
              {status}
            </th>
          ))}
          <th class="num">Oldest waiting</th>
          <th>Limits</th>
        </tr>
      </thead>
      <tbody>
        {queues.map((queue) => (
          <tr key={queue.queue} data-queue={queue.queue}>
            <td>
              <a href={href("/jobs", { queue: queue.queue })}>{queue.queue}</a>
            </td>
            {JOB_STATUSES.map((status) => (
              <td key={status} class="num">
                {queue.counts[status] > 0 ? <a href={href("/jobs", { queue: queue.queue, status })}>{queue.counts[status]}</a> : <span class="muted">0</span>}
              </td>
            ))}
            <td class="num">{queue.oldestReadyAgeMs === null ? <span class="muted">—</span> : formatDuration(queue.oldestReadyAgeMs)}</td>
            <td data-testid="limits">
              <QueueLimits queue={queue} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}

/** What `conveyor queues` shows in LIMITS: paused, a cap on jobs running at once, a claim rate, limits per key. */
function QueueLimits({ queue }: { queue: QueueStatsJson }) {
  const perKey = queue.keyLimits
    ? [
        ...(queue.keyLimits.concurrencyLimit !== null ? [`${queue.keyLimits.concurrencyLimit} at once`] : []),
        ...(queue.keyLimits.rateLimit ? [`${queue.keyLimits.rateLimit.count} per ${formatDuration(queue.keyLimits.rateLimit.intervalMs)}`] : []),
      ]
    : null;
  const limits = [
    ...(queue.concurrencyLimit !== null ? [`${queue.concurrencyLimit} at once`] : []),
    ...(queue.rateLimit ? [`${queue.rateLimit.count} per ${formatDuration(queue.rateLimit.intervalMs)}`] : []),
    ...(perKey !== null ? [`per key: ${perKey.length > 0 ? perKey.join(", ") : "overrides only"}`] : []),
  ];
  if (!queue.paused && limits.length === 0) return <span class="muted">none</span>;
  return (
    <>
      {queue.paused ? <Badge value="paused" /> : null} {limits.join(", ")}
    </>
  );
}

function WorkerTable({ workers }: { workers: WorkerJson[] }) {
  if (workers.length === 0) return <p class="muted">No live workers. Start one with `conveyor worker --jobs …`.</p>;
  return (
    <div class="table-wrap">
    <table class="data" data-testid="workers">
      <thead>
        <tr>
          <th>Worker</th>
          <th>Host / pid</th>
          <th>Queues</th>
          <th class="num">Running</th>
          <th>Running jobs</th>
          <th>Last seen</th>
        </tr>
      </thead>
      <tbody>
        {workers.map((worker) => (
          <tr key={worker.id}>
            <td>
              <code>{worker.id}</code>
            </td>
            <td>
              {worker.hostname} / {worker.pid}
            </td>
            <td>{worker.queues ? worker.queues.join(", ") : <span class="muted">all</span>}</td>
            <td class="num">
              {worker.runningJobIds.length} / {worker.concurrency}
            </td>
            <td>
              {worker.runningJobIds.length === 0 ? (
                <span class="muted">idle</span>
              ) : (
                worker.runningJobIds.map((id) => (
                  <a key={id} class="chip" href={href(`/jobs/${id}`)}>
                    {shortId(id)}
                  </a>
                ))
              )}
            </td>
            <td>{ago(worker.lastSeenAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}
