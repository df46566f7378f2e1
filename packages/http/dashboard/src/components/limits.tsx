import { formatRateLimit } from "../format.js";
import type { QueueStatsJson } from "../types.js";
import { Badge } from "./common.js";

/** Limits as stored: a cap on jobs running at once and a rate, each null when not set. */
export interface Limits {
  concurrency: number | null;
  rateLimit: { count: number; intervalMs: number } | null;
}

/** ["4 at once", "60 per minute"]: each limit set, in words; empty when none is. */
export function limitParts(limits: Limits): string[] {
  return [...(limits.concurrency !== null ? [`${limits.concurrency} at once`] : []), ...(limits.rateLimit ? [formatRateLimit(limits.rateLimit)] : [])];
}

/** "4 at once, 60 per minute": a key's or a queue's limits; "none" when it has none. */
export function describeLimits(limits: Limits): string {
  const parts = limitParts(limits);
  return parts.length > 0 ? parts.join(", ") : "none";
}


/**
 * What `conveyor queues` shows in LIMITS, compact for a table cell: paused
 * and the queue's own limits on one line, its limits per key on a second,
 * neither wrapping: two short lines instead of a narrow column of words.
 */
export function QueueLimits({ paused, queue }: { paused: boolean; queue: QueueStatsJson | null }) {
  if (queue === null) return paused ? <Badge value="paused" /> : <span class="muted">…</span>;
  const own = limitParts(queue);
  const perKey = queue.keyLimits ? limitParts(queue.keyLimits) : null;
  if (!paused && own.length === 0 && perKey === null) return <span class="muted">none</span>;
  return (
    <span class="limits">
      {paused || own.length > 0 ? (
        <span class="limit-line" data-testid="queue-limits">
          {paused ? <Badge value="paused" /> : null}
          {paused && own.length > 0 ? " " : null}
          {own.join(" · ")}
        </span>
      ) : null}
      {perKey !== null ? (
        <span class="limit-line" data-testid="key-limits-summary">
          <span class="muted">per key </span>
          {perKey.length > 0 ? perKey.join(" · ") : "overrides only"}
        </span>
      ) : null}
    </span>
  );
}
