import { MAX_CONCURRENCY_LIMIT } from "../core/defaults.js";
import { NotFoundError, ValidationError } from "../core/errors.js";
import type { QueueLimitsInput, QueueSettings, TenantSettings } from "../core/queue-settings.js";
import type { QueueSettingsStore } from "../store/queue-settings-store.js";
import type { Store } from "../store/store.js";
import { checkCount, checkRateLimit, refuse } from "./limit-input.js";
import { checkKnownFields, checkName, checkTenant } from "../core/validate.js";

/**
 * Queue and tenant settings (`conveyor.queues`): pause, resume and limit
 * queues across all workers; cap tenants. Queues never configured are
 * unpaused and unlimited. Every input is validated here (a ValidationError
 * names the field); the statements are in `store/sql/queue-settings.ts`.
 * Limits per key are `conveyor.keyLimits`.
 *
 * @example
 * await conveyor.queues.pause("mail");
 * await conveyor.queues.setLimits("mail", { concurrency: 3 });
 * await conveyor.queues.resume("mail");
 */
export class Queues {
  private readonly store: QueueSettingsStore;

  /** @internal `db`: the client's Store, whose queue settings this validates and writes. */
  constructor(private readonly db: Store) {
    this.store = db.queueSettings;
  }

  /**
   * Pause a queue: no worker claims its jobs (they stay queued) until
   * `resume`. Claims already running finish normally.
   */
  async pause(queue: string): Promise<QueueSettings> {
    checkName(queue, "queue", ValidationError);
    return this.store.queueSettingsSetPaused(queue, true);
  }

  /** Resume a paused queue and wake idle workers at once. */
  async resume(queue: string): Promise<QueueSettings> {
    checkName(queue, "queue", ValidationError);
    return this.store.queueSettingsSetPaused(queue, false);
  }

  /**
   * Limit a queue across all workers: `concurrency` caps its jobs running at
   * once; `rateLimit` allows `count` claims per fixed window of `intervalMs`.
   * An omitted field keeps its value; null removes that limit. Default: no
   * limits. A queue may have limits per key (`keyLimits.set`) too: a job
   * is then claimed only when both the queue's limits and its key's allow it.
   *
   * @example
   * await conveyor.queues.setLimits("mail", { concurrency: 3, rateLimit: { count: 100, intervalMs: 60_000 } });
   */
  async setLimits(queue: string, limits: QueueLimitsInput): Promise<QueueSettings> {
    checkName(queue, "queue", ValidationError);
    checkKnownFields(limits, { concurrency: true, rateLimit: true }, "a queue limit");
    if (limits.concurrency === undefined && limits.rateLimit === undefined) refuse("limits", "must set concurrency or rateLimit");
    const concurrency =
      limits.concurrency === undefined
        ? { set: false, value: null }
        : { set: true, value: checkCount(limits.concurrency, "concurrency", MAX_CONCURRENCY_LIMIT) };
    return this.store.queueSettingsSetLimits(queue, concurrency, checkRateLimit(limits.rateLimit));
  }

  /**
   * Delete a queue's settings, as if it had never been configured: it is
   * resumed, its limits are lifted and idle workers are woken. Its jobs are
   * untouched. Pausing or limiting a queue creates its settings, whether or
   * not it has jobs yet (so a queue can be set up before its first job);
   * this is how settings made for a queue no longer used, or a mistyped
   * name, are removed. Throws a NotFoundError when the queue has no settings.
   *
   * @example
   * await conveyor.queues.deleteSettings("mial"); // undo `queues.pause("mial")`
   */
  async deleteSettings(queue: string): Promise<void> {
    checkName(queue, "queue", ValidationError);
    if (!(await this.store.queueSettingsDelete(queue))) throw new NotFoundError(`queue ${JSON.stringify(queue)} has no settings to delete`);
  }

  /** Every queue with settings (paused, limits). Queues never configured are unlimited and not listed. */
  listSettings(): Promise<QueueSettings[]> {
    return this.store.queueSettingsList();
  }

  /** Cap one tenant's jobs running at once across all workers; null removes the cap. Default: no cap. */
  async setTenantLimits(tenant: string, limits: { concurrency: number | null }): Promise<TenantSettings> {
    checkTenant(tenant);
    checkKnownFields(limits, { concurrency: true }, "a tenant limit");
    if (limits.concurrency === undefined) {
      refuse("concurrency", "is required (a number, or null for no cap)");
    }
    const concurrency = checkCount(limits.concurrency, "concurrency", MAX_CONCURRENCY_LIMIT);
    // A cap turns every worker to the fair claim: its index first (sql/tenant-index.ts).
    if (concurrency !== null) await this.db.tenantIndexEnsure();
    return this.store.tenantSettingsSetLimits(tenant, concurrency);
  }

  /** Every tenant with a setting. */
  listTenantSettings(): Promise<TenantSettings[]> {
    return this.store.tenantSettingsList();
  }
}
