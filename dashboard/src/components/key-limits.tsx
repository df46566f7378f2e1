import type { Api } from "../api.js";
import { formatDuration } from "../format.js";
import type { KeyLimitJson, KeyLimitList, KeyLoadJson, TopKeys } from "../types.js";

/** Keys shown per key-limited queue. */
const TOP_KEYS = 5;

/** One key-limited queue: its default limits, its overrides, and its busiest keys. */
export interface KeyLimitedQueue {
  queue: string;
  defaults: KeyLimitJson;
  overrides: number;
  top: KeyLoadJson[];
}

/** The key-limited queues with their busiest keys (admin keys only: callers check the key's role first). */
export async function loadKeyLimitedQueues(api: Api): Promise<KeyLimitedQueue[]> {
  const limits = await api.get<KeyLimitList>("/v1/key-limits");
  const defaults = limits.items.filter((item) => item.key === null);
  return Promise.all(
    defaults.map(async (item) => ({
      queue: item.queue,
      defaults: item,
      overrides: limits.items.filter((other) => other.queue === item.queue && other.key !== null).length,
      top: (await api.get<TopKeys>(`/v1/queues/${encodeURIComponent(item.queue)}/keys?limit=${TOP_KEYS}`)).items,
    })),
  );
}

/** "4 at once, 60 per 1 min": a key's limits; "none" when it has none. */
function describe(limits: { concurrencyLimit: number | null; rateLimit: { count: number; intervalMs: number } | null }): string {
  const parts = [
    ...(limits.concurrencyLimit !== null ? [`${limits.concurrencyLimit} at once`] : []),
    ...(limits.rateLimit ? [`${limits.rateLimit.count} per ${formatDuration(limits.rateLimit.intervalMs)}`] : []),
  ];
  return parts.length > 0 ? parts.join(", ") : "none";
}

/** Limits per key: each key-limited queue's limits and the keys with the most jobs waiting. */
export function KeyLimitTables({ queues }: { queues: KeyLimitedQueue[] }) {
  if (queues.length === 0) return <p class="muted">No queue has limits per key.</p>;
  return (
    <>
      {queues.map((entry) => (
        <div key={entry.queue} data-testid="key-limits" data-queue={entry.queue}>
          <p>
            <strong>{entry.queue}</strong>: every key {describe(entry.defaults)}
            {entry.overrides > 0 ? `; ${entry.overrides} key(s) overridden` : ""}
          </p>
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
                        {describe(key)}
                        {key.source === "override" ? <span class="muted"> (override)</span> : null}
                        {key.concurrencyLimit !== null && key.running >= key.concurrencyLimit ? <span class="muted"> · at its limit</span> : null}
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
