import { useState } from "preact/hooks";
import { type Api, ApiError } from "../api.js";
import { ago, formatNumber } from "../format.js";
import { usePoll } from "../poll.js";
import { href } from "../router.js";
import type { KeyLimitJson, KeyLimitList, KeyLoadJson, KeyStatusJson, TopKeys } from "../types.js";
import { Badge, Problem, QueueLink, Updated } from "./common.js";
import { describeLimits } from "./limits.js";

/** Keys shown per key-limited queue on the overview, and on the page of its own. */
const TOP_KEYS = 5;
const PAGE_TOP_KEYS = 20;
/** Limits change rarely; the busiest keys move with the work. */
const PAGE_REFRESH_MS = 5_000;

/** One key-limited queue: its default limits, its overrides, and its busiest keys. */
export interface KeyLimitedQueue {
  queue: string;
  defaults: KeyLimitJson;
  overrides: number;
  /** The keys whose limits override the default. */
  overridden: KeyLimitJson[];
  top: KeyLoadJson[];
}

/** The key-limited queues with their busiest keys (admin keys only: callers check the key's role first). */
export async function loadKeyLimitedQueues(api: Api, topKeys = TOP_KEYS): Promise<KeyLimitedQueue[]> {
  const limits = await api.get<KeyLimitList>("/v1/key-limits");
  const defaults = limits.items.filter((item) => item.key === null);
  return Promise.all(
    defaults.map(async (item) => ({
      queue: item.queue,
      defaults: item,
      overrides: limits.items.filter((other) => other.queue === item.queue && other.key !== null).length,
      overridden: limits.items.filter((other) => other.queue === item.queue && other.key !== null),
      top: (await api.get<TopKeys>(`/v1/queues/${encodeURIComponent(item.queue)}/keys?limit=${topKeys}`)).items,
    })),
  );
}

/** Limits per key: each key-limited queue's limits and the keys with the most jobs waiting. */
export function KeyLimitTables({ queues, summary = true }: { queues: KeyLimitedQueue[]; summary?: boolean }) {
  if (queues.length === 0) return <p class="muted">No queue has limits per key.</p>;
  return (
    <>
      {queues.map((entry) => (
        <div key={entry.queue} data-testid="key-limits" data-queue={entry.queue}>
          {summary ? (
            <p>
              <strong>
                <QueueLink queue={entry.queue} />
              </strong>
              : every key {describeLimits(entry.defaults)}
              {entry.overrides > 0 ? `; ${entry.overrides} key(s) overridden` : ""}
            </p>
          ) : null}
          {entry.top.length === 0 ? (
            <p class="muted">No job with a key is waiting.</p>
          ) : (
            <div class="table-wrap">
              <table class="data stack">
                <thead>
                  <tr>
                    <th>Key</th>
                    <th class="num">Waiting</th>
                    <th class="num">Running</th>
                    <th>Limits</th>
                  </tr>
                </thead>
                <tbody>
                  {entry.top.map((key) => (
                    <tr key={key.key} data-key={key.key}>
                      <td data-label="Key">
                        <code>{key.key}</code>
                      </td>
                      <td class="num" data-label="Waiting">
                        {key.waiting}
                      </td>
                      <td class="num" data-label="Running">
                        {key.running}
                      </td>
                      <td data-label="Limits">
                        {describeLimits(key)}
                        {key.source === "override" ? <span class="muted"> (override)</span> : null}
                        {key.concurrency !== null && key.running >= key.concurrency ? <span class="muted"> · at its limit</span> : null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      ))}
    </>
  );
}

/**
 * Limits per key, a page of its own (admin keys: the routes are admin only):
 * per key-limited queue its default, every override, and its 20 busiest
 * keys; and for any key, what it is doing and why its jobs wait.
 */
export function KeyLimitsPage({ api, admin }: { api: Api; admin: boolean | null }) {
  const polled = usePoll<KeyLimitedQueue[] | null>(async () => (admin === true ? loadKeyLimitedQueues(api, PAGE_TOP_KEYS) : null), admin === true ? PAGE_REFRESH_MS : null, [
    api,
    admin,
  ], "key-limits");
  const queues = polled.data;
  return (
    <section data-testid="key-limits-page">
      <header class="page-head">
        <h1>Limits per key</h1>
        {admin === true ? <Updated at={polled.updatedAt} error={polled.error} /> : null}
      </header>
      {admin === false ? (
        <p class="muted" data-testid="admin-only">
          Limits per key span tenants, so only an admin API key may read them. Sign in with one to see this page.
        </p>
      ) : null}
      <Problem error={polled.error} />
      {queues && queues.length === 0 ? (
        <p class="muted">
          No queue has limits per key. Set them with <code>conveyor queues key-limits</code> or <code>PATCH /v1/queues/&#123;name&#125;/key-limits</code>.
        </p>
      ) : null}
      {queues?.map((entry) => (
        <div key={entry.queue} class="key-queue" data-testid="key-queue" data-queue={entry.queue}>
          <h2>
            <QueueLink queue={entry.queue} />
          </h2>
          <p data-testid="key-default">
            Every key: <strong>{describeLimits(entry.defaults)}</strong> <span class="muted">(set {ago(entry.defaults.updatedAt)})</span>
          </p>
          <h3>Overrides</h3>
          <KeyOverrides overridden={entry.overridden} />
          <h3>Busiest keys</h3>
          <KeyLimitTables queues={[entry]} summary={false} />
          <KeyLookup api={api} queue={entry.queue} />
        </div>
      ))}
    </section>
  );
}

/** A queue's overrides: each key whose limits replace the default, and when it was set. */
export function KeyOverrides({ overridden }: { overridden: KeyLimitJson[] }) {
  if (overridden.length === 0) return <p class="muted">None: every key has the default.</p>;
  return (
    <div class="table-wrap">
      <table class="data stack" data-testid="key-overrides">
        <thead>
          <tr>
            <th>Key</th>
            <th>Limits</th>
            <th>Set</th>
          </tr>
        </thead>
        <tbody>
          {overridden.map((item) => (
            <tr key={item.key} data-key={item.key}>
              <td data-label="Key">
                <code>{item.key}</code>
              </td>
              <td data-label="Limits">{describeLimits(item)}</td>
              <td data-label="Set">{ago(item.updatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What one key of a queue is doing, and why its jobs wait (`GET /v1/queues/{name}/keys/{key}`). */
function KeyLookup({ api, queue }: { api: Api; queue: string }) {
  const [key, setKey] = useState("");
  const [status, setStatus] = useState<KeyStatusJson | null>(null);
  const [problem, setProblem] = useState<ApiError | null>(null);
  const look = async (event: Event) => {
    event.preventDefault();
    setProblem(null);
    setStatus(null);
    if (key.trim() === "") return;
    try {
      setStatus(await api.get<KeyStatusJson>(`/v1/queues/${encodeURIComponent(queue)}/keys/${encodeURIComponent(key.trim())}`));
    } catch (failure) {
      setProblem(failure instanceof ApiError ? failure : new ApiError(0, "CLIENT", String(failure)));
    }
  };
  return (
    <form class="filters key-lookup" onSubmit={look} aria-label={`look up a key of ${queue}`}>
      <label>
        Why is a key waiting?
        <input name="key" value={key} placeholder="a key" onInput={(event) => setKey(event.currentTarget.value)} />
      </label>
      <button type="submit" class="secondary">
        Look up
      </button>
      <Problem error={problem} />
      {status ? (
        <p class="key-status" data-testid="key-status">
          <Badge value={status.state} /> <span data-testid="key-reason">{status.reason}</span>{" "}
          <span class="muted">
            ({formatNumber(status.running)} running, {formatNumber(status.ready)} ready, {formatNumber(status.scheduled)} scheduled; limits{" "}
            {describeLimits(status)}
            {status.source === "override" ? ", an override" : status.source === "default" ? ", the default" : ""})
          </span>
        </p>
      ) : null}
    </form>
  );
}
