/** A queue's rate limit: at most `count` claims per fixed window of `intervalMs`. */
export interface RateLimit {
  count: number;
  intervalMs: number;
}

/** What is set on one queue (a queue without settings is unpaused and unlimited). */
export interface QueueSettings {
  queue: string;
  /** Paused queues are never claimed; their jobs stay queued. */
  paused: boolean;
  /** Most of the queue's jobs running at once across all workers; null: no cap. */
  concurrency: number | null;
  /** null: no rate limit. */
  rateLimit: RateLimit | null;
  updatedAt: Date;
}

/** Limits to change with `setQueueLimits`: an omitted field keeps its value, null removes the limit. */
export interface QueueLimitsInput {
  concurrency?: number | null;
  rateLimit?: RateLimit | null;
}

/** What is set on one tenant. */
export interface TenantSettings {
  tenant: string;
  /** Most of the tenant's jobs running at once across all workers; null: no cap. */
  concurrency: number | null;
  updatedAt: Date;
}

/** How a worker orders claims across tenants: "off" (plain priority order) or "tenant" (fair shares: fewest running first). */
export type Fairness = "off" | "tenant";
