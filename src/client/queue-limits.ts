import { MAX_CONCURRENCY_LIMIT, MAX_RATE_INTERVAL_MS, MAX_RATE_LIMIT_COUNT } from "../core/defaults.js";
import { ConflictError, NotFoundError, ValidationError } from "../core/errors.js";
import type { QueueLimitsInput, QueueSettings, TenantSettings } from "../core/queue-settings.js";
import type { QueueSettingsStore } from "../store/queue-settings-store.js";
import type { Store } from "../store/store.js";
import { checkCount, refuse } from "./limit-input.js";
import { checkName, checkTenant } from "../core/validate.js";

/**
 * Pause, resume and limit queues; cap tenants. Every input is validated
 * here (a ValidationError names the field); the statements are in
 * `store/sql/queue-settings.ts`. Used through the `Conveyor` methods.
 */
export class QueueLimits {
  private readonly store: QueueSettingsStore;

  /** `db`: the client's Store, whose queue settings this validates and writes. */
  constructor(private readonly db: Store) {
    this.store = db.queueSettings;
  }

  async setPaused(queue: string, paused: boolean): Promise<QueueSettings> {
    checkName(queue, "queue", ValidationError);
    return this.store.queueSettingsSetPaused(queue, paused);
  }

  async setQueueLimits(queue: string, limits: QueueLimitsInput): Promise<QueueSettings> {
    checkName(queue, "queue", ValidationError);
    if (typeof limits !== "object" || limits === null) refuse("limits", "must be an object");
    const unknown = Object.keys(limits).filter((key) => key !== "concurrency" && key !== "rateLimit");
    if (unknown.length > 0) refuse(unknown[0]!, "is not a queue limit (known: concurrency, rateLimit)");
    if (limits.concurrency === undefined && limits.rateLimit === undefined) refuse("limits", "must set concurrency or rateLimit");
    const concurrency =
      limits.concurrency === undefined
        ? { set: false, value: null }
        : { set: true, value: checkCount(limits.concurrency, "concurrency", MAX_CONCURRENCY_LIMIT) };
    let rate: { set: boolean; count: number | null; intervalMs: number | null } = { set: false, count: null, intervalMs: null };
    if (limits.rateLimit === null) rate = { set: true, count: null, intervalMs: null };
    else if (limits.rateLimit !== undefined) {
      if (typeof limits.rateLimit !== "object") refuse("rateLimit", "must be { count, intervalMs } or null");
      const count = checkCount(limits.rateLimit.count, "rateLimit.count", MAX_RATE_LIMIT_COUNT);
      const intervalMs = checkCount(limits.rateLimit.intervalMs, "rateLimit.intervalMs", MAX_RATE_INTERVAL_MS);
      if (count === null) refuse("rateLimit.count", "is required");
      if (intervalMs === null) refuse("rateLimit.intervalMs", "is required");
      rate = { set: true, count, intervalMs };
    }
    const limiting = concurrency.value !== null || rate.count !== null;
    if (limiting && (await this.db.keyLimits.keyLimitsList(queue)).length > 0) {
      throw new ConflictError(`queue ${JSON.stringify(queue)} has limits per key; remove them before setting queue limits`);
    }
    return this.store.queueSettingsSetLimits(queue, concurrency, rate);
  }

  async deleteQueueSettings(queue: string): Promise<void> {
    checkName(queue, "queue", ValidationError);
    if (!(await this.store.queueSettingsDelete(queue))) throw new NotFoundError(`queue ${JSON.stringify(queue)} has no settings to delete`);
  }

  listQueueSettings(): Promise<QueueSettings[]> {
    return this.store.queueSettingsList();
  }

  async setTenantLimits(tenant: string, limits: { concurrency: number | null }): Promise<TenantSettings> {
    checkTenant(tenant);
    if (typeof limits !== "object" || limits === null || limits.concurrency === undefined) {
      refuse("concurrency", "is required (a number, or null for no cap)");
    }
    const concurrency = checkCount(limits.concurrency, "concurrency", MAX_CONCURRENCY_LIMIT);
    // A cap turns every worker to the fair claim: its index first (sql/tenant-index.ts).
    if (concurrency !== null) await this.db.tenantIndexEnsure();
    return this.store.tenantSettingsSetLimits(tenant, concurrency);
  }

  listTenantSettings(): Promise<TenantSettings[]> {
    return this.store.tenantSettingsList();
  }
}
