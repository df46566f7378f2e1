import type { StatsStore, ThroughputMinute } from "../store/stats-store.js";
import { scopeTenant, type TenantScope } from "./scope.js";

export type { ThroughputMinute } from "../store/stats-store.js";

/**
 * Activity over time, for dashboards (`conveyor.throughput`): jobs enqueued and attempts finished
 * per minute, optionally limited to one tenant.
 *
 * @example
 * const minutes = await conveyor.throughput.lastHour({ tenant: "acme" });
 */
export class Throughput {
  /** @internal Made by the client, on the stats of the store it reads from (a read replica's when it has one). */
  constructor(private readonly store: StatsStore) {}

  /** The last 60 minutes, oldest first, one entry per minute (zeros included). */
  async lastHour(scope: TenantScope = {}): Promise<ThroughputMinute[]> {
    return this.store.statsThroughputByMinute(scopeTenant(scope));
  }
}
