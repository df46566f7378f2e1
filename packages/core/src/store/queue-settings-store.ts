import type { QueueSettings, TenantSettings } from "../core/queue-settings.js";
import type { Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { runQuery } from "./run-query.js";

/** What a worker needs to choose its claim statements. */
export interface ClaimRestrictions {
  /** Limited, unpaused queues, by name (the fast path skips them). */
  limitedQueues: string[];
  /** Whether any tenant has a concurrency cap. */
  tenantCaps: boolean;
  /** Queues with limits per key, by name (the fast path skips them). */
  keyLimitedQueues: string[];
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function rowToQueueSettings(row: Record<string, any>): QueueSettings {
  return {
    queue: row.name,
    paused: row.paused,
    concurrency: row.concurrency_limit,
    rateLimit: row.rate_limit === null ? null : { count: row.rate_limit, intervalMs: row.rate_interval_ms },
    updatedAt: row.updated_at,
  };
}

function rowToTenantSettings(row: Record<string, any>): TenantSettings {
  return { tenant: row.tenant, concurrency: row.concurrency_limit, updatedAt: row.updated_at };
}

/** Queue and tenant settings (statements in `sql/queue-settings.ts`). Inputs are validated by the caller. */
export class QueueSettingsStore {
  /** The channel workers LISTEN on (routines/jobs-notify-ready.ts). */
  private readonly channel: string;

  constructor(
    private readonly pool: Queryable,
    private readonly q: Queries,
    schema: string,
  ) {
    this.channel = `${schema}:jobs`;
  }

  async queueSettingsSetPaused(queue: string, paused: boolean): Promise<QueueSettings> {
    const { rows } = await runQuery(this.pool, this.q.queueSettingsSetPaused, [queue, paused, this.channel]);
    return rowToQueueSettings(rows[0]);
  }

  async queueSettingsSetLimits(
    queue: string,
    concurrency: { set: boolean; value: number | null },
    rate: { set: boolean; count: number | null; intervalMs: number | null },
  ): Promise<QueueSettings> {
    const { rows } = await runQuery(this.pool, this.q.queueSettingsSetLimits, [
      queue,
      concurrency.set,
      concurrency.value,
      rate.set,
      rate.count,
      rate.intervalMs,
      this.channel,
    ]);
    return rowToQueueSettings(rows[0]);
  }

  /** Delete a queue's settings; false when it had none. */
  async queueSettingsDelete(queue: string): Promise<boolean> {
    const { rows } = await runQuery(this.pool, this.q.queueSettingsDelete, [queue, this.channel]);
    return rows.length > 0;
  }

  async queueSettingsList(): Promise<QueueSettings[]> {
    const { rows } = await runQuery(this.pool, this.q.queueSettingsList, []);
    return rows.map(rowToQueueSettings);
  }

  async tenantSettingsSetLimits(tenant: string, concurrency: number | null): Promise<TenantSettings> {
    const { rows } = await runQuery(this.pool, this.q.tenantSettingsSetLimits, [tenant, concurrency, this.channel]);
    return rowToTenantSettings(rows[0]);
  }

  async tenantSettingsList(): Promise<TenantSettings[]> {
    const { rows } = await runQuery(this.pool, this.q.tenantSettingsList, []);
    return rows.map(rowToTenantSettings);
  }

  async claimRestrictions(): Promise<ClaimRestrictions> {
    const { rows } = await runQuery(this.pool, this.q.claimRestrictions, []);
    return { limitedQueues: rows[0].limited_queues, tenantCaps: rows[0].tenant_caps, keyLimitedQueues: rows[0].key_limited_queues };
  }
}
