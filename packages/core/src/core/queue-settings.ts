/** A queue's rate limit: at most `count` claims per fixed window of `intervalMs`. */
export interface RateLimit {
  /** Claims allowed per window, 1 to `MAX_RATE_LIMIT_COUNT`. */
  count: number;
  /** The window in ms, at most `MAX_RATE_INTERVAL_MS` (one day). */
  intervalMs: number;
}

/** What is set on one queue (a queue without settings is unpaused and unlimited). */
export interface QueueSettings {
  /** The queue. */
  queue: string;
  /** Paused queues are never claimed; their jobs stay queued. */
  paused: boolean;
  /** Most of the queue's jobs running at once across all workers; null: no cap. */
  concurrency: number | null;
  /** null: no rate limit. */
  rateLimit: RateLimit | null;
  /** When the settings last changed. */
  updatedAt: Date;
}

/** Limits to change with `queues.setLimits`: an omitted field keeps its value, null removes the limit. */
export interface QueueLimitsInput {
  /** Most of the queue's jobs running at once across all workers; null removes the cap. Default: no cap. */
  concurrency?: number | null;
  /** Claims per window; null removes the limit. Default: none. */
  rateLimit?: RateLimit | null;
}

/** What is set on one tenant. */
export interface TenantSettings {
  /** The tenant. */
  tenant: string;
  /** Most of the tenant's jobs running at once across all workers; null: no cap. */
  concurrency: number | null;
  /** When the settings last changed. */
  updatedAt: Date;
}

/** How a worker orders claims across tenants: "off" (plain priority order) or "tenant" (fair shares: fewest running first). */
export type Fairness = "off" | "tenant";
