import type { StatsStore, ThroughputMinute } from "../store/stats-store.js";
import { clientInternals, type ConveyorClient, type TenantScope } from "./conveyor-client.js";

export type { ThroughputMinute } from "../store/stats-store.js";

/**
 * Activity over time, for dashboards: jobs enqueued and attempts finished
 * per minute, optionally limited to one tenant.
 *
 * @example
 * const minutes = await new Throughput(conveyor).lastHour({ tenant: "acme" });
 */
export class Throughput {
  private readonly store: StatsStore;

  constructor(conveyor: ConveyorClient) {
    this.store = clientInternals(conveyor).reader.stats;
  }

  /** The last 60 minutes, oldest first, one entry per minute (zeros included). */
  lastHour(scope: TenantScope = {}): Promise<ThroughputMinute[]> {
    return this.store.statsThroughputByMinute(scope.tenant ?? null);
  }
}
