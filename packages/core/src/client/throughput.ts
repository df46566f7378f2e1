import { ValidationError } from "../core/errors.js";
import { checkKnownFields, checkName } from "../core/validate.js";
import type { StatsStore, ThroughputMinute } from "../store/stats-store.js";
import type { TenantScope } from "./scope.js";

export type { ThroughputMinute } from "../store/stats-store.js";

/** Which jobs `lastHour` counts: one tenant's, one queue's, or both; omit a field (or null) for all. */
export interface ThroughputFilter extends TenantScope {
  /** Only jobs in this queue (the one they are in now); omit or null for every queue. */
  queue?: string | null;
}

/**
 * Activity over time, for dashboards (`conveyor.throughput`): jobs enqueued and attempts finished
 * per minute, optionally limited to one tenant or one queue.
 *
 * @example
 * const minutes = await conveyor.throughput.lastHour({ tenant: "acme", queue: "emails" });
 */
export class Throughput {
  /** @internal Made by the client, on the stats of the store it reads from (a read replica's when it has one). */
  constructor(private readonly store: StatsStore) {}

  /**
   * The last 60 minutes, oldest first, one entry per minute (zeros
   * included). A queue that is not a valid name is refused (a
   * ValidationError naming `queue`); one without jobs reads as zeros.
   */
  async lastHour(filter: ThroughputFilter = {}): Promise<ThroughputMinute[]> {
    checkKnownFields(filter, { tenant: true, queue: true }, "a field of a throughput filter");
    const queue = filter.queue ?? null;
    if (queue !== null) checkName(queue, "queue", ValidationError);
    return this.store.statsThroughputByMinute(filter.tenant ?? null, queue);
  }
}
