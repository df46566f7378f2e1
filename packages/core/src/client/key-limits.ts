import { DEFAULT_TOP_KEYS, MAX_CONCURRENCY_LIMIT, MAX_RATE_INTERVAL_MS, MAX_TOP_KEYS } from "../core/defaults.js";
import { NotFoundError, ValidationError } from "../core/errors.js";
import type { KeyHeldBack, KeyLimitSettings, KeyLimitsInput, KeyLoad, KeyStatus } from "../core/key-limits.js";
import { checkKnownFields, checkLimitKey, checkName, type KnownFields } from "../core/validate.js";
import type { KeyLimitStore, KeyStatusRow } from "../store/key-limit-store.js";
import type { Store } from "../store/store.js";
import { checkCount, checkRateLimit, type RateChange, refuse } from "./limit-input.js";

const KNOWN: KnownFields<KeyLimitsInput> = { concurrency: true, rateLimit: true, throttleMs: true };

/** Which key `set` and `delete` act on: none for the queue's default. */
function keyOf(options: { key?: string }): string | null {
  checkKnownFields(options, { key: true }, "a key limits option");
  const key = options.key ?? null;
  if (key !== null) checkLimitKey(key, "key");
  return key;
}

/** The rate part of a KeyLimitsInput, validated: `throttleMs` is a rate of one start per window. */
function resolveRate(limits: KeyLimitsInput): RateChange {
  if (limits.rateLimit !== undefined && limits.throttleMs !== undefined) refuse("throttleMs", "is exclusive with rateLimit (a throttle is a rate of 1)");
  if (limits.throttleMs !== undefined) {
    const intervalMs = checkCount(limits.throttleMs, "throttleMs", MAX_RATE_INTERVAL_MS);
    return intervalMs === null ? { set: true, count: null, intervalMs: null } : { set: true, count: 1, intervalMs };
  }
  return checkRateLimit(limits.rateLimit);
}

/** Why a key's jobs are (not) running, from what the store read (most binding first). */
export function explainKey(queue: string, key: string, row: KeyStatusRow): KeyStatus {
  const { limits } = row;
  const windowEndsAt =
    limits.rateLimit !== null && row.windowStartedAt !== null ? new Date(row.windowStartedAt.getTime() + limits.rateLimit.intervalMs) : null;
  const window =
    windowEndsAt !== null && windowEndsAt > row.now ? { startedAt: row.windowStartedAt!, count: row.windowCount, endsAt: windowEndsAt } : null;
  const base = { queue, key, limits, source: row.source, running: row.running, ready: row.ready, scheduled: row.scheduled, window };
  const waiting = `${row.ready} job(s) of key ${JSON.stringify(key)} ready`;
  if (row.ready > 0 && row.paused) return { ...base, state: "paused", reason: `${waiting}; queue ${JSON.stringify(queue)} is paused` };
  if (row.ready > 0 && limits.concurrency !== null && row.running >= limits.concurrency) {
    return { ...base, state: "concurrency_limit", reason: `${waiting}; ${row.running} running, at the key's concurrency limit of ${limits.concurrency} (${row.source})` };
  }
  if (row.ready > 0 && window !== null && limits.rateLimit !== null && window.count >= limits.rateLimit.count) {
    return {
      ...base,
      state: "rate_limit",
      reason: `${waiting}; ${window.count} started in the current window, the key's rate limit of ${limits.rateLimit.count} per ${limits.rateLimit.intervalMs} ms (${row.source}); the window closes at ${window.endsAt.toISOString()}`,
    };
  }
  if (row.ready > 0) return { ...base, state: "ready", reason: `${waiting}; no key limit holds them: they start as workers free slots` };
  if (row.scheduled > 0) return { ...base, state: "scheduled", reason: `${row.scheduled} job(s) of key ${JSON.stringify(key)} wait for their run time` };
  return { ...base, state: "idle", reason: `no job of key ${JSON.stringify(key)} is waiting in queue ${JSON.stringify(queue)}` };
}

/**
 * Limits per key (`conveyor.keyLimits`): set, delete and list them;
 * explain a key; list the keys with the most jobs waiting. Jobs carry
 * their key: `limitKey` at enqueue, or the definition's
 * `limitKey(payload)`. Every input is validated here (a ValidationError
 * names the field); the statements are in `store/sql/key-limits.ts`.
 *
 * @example
 * await conveyor.keyLimits.set("webhooks", { concurrency: 5 });
 * const { state, reason } = await conveyor.keyLimits.status("webhooks", "api.example.com");
 */
export class KeyLimitsControl {
  private readonly store: KeyLimitStore;

  /** @internal `db`: the client's Store. */
  constructor(private readonly db: Store) {
    this.store = db.keyLimits;
  }

  /**
   * Limit each key of a queue: `concurrency` caps one key's jobs running
   * at once across all workers; `rateLimit` allows `count` starts per key
   * per fixed window of `intervalMs`; `throttleMs` allows one. Without
   * `options.key` this sets the queue's default for every key; with it,
   * that key's override (which replaces the default for the key). An
   * omitted field keeps its value; null removes that limit. Takes effect at
   * the workers' next claim. Default: no key limits. A queue may have
   * queue limits (`queues.setLimits`) too: a job is then claimed only when
   * both its key's limits and the queue's allow it.
   *
   * @example
   * await conveyor.keyLimits.set("webhooks", { concurrency: 5, rateLimit: { count: 100, intervalMs: 60_000 } });
   * await conveyor.keyLimits.set("webhooks", { concurrency: 1, throttleMs: 1_000 }, { key: "slow.example.com" });
   */
  async set(queue: string, limits: KeyLimitsInput, options: { key?: string } = {}): Promise<KeyLimitSettings> {
    checkName(queue, "queue", ValidationError);
    const key = keyOf(options);
    checkKnownFields(limits, KNOWN, "a key limit");
    if (limits.concurrency === undefined && limits.rateLimit === undefined && limits.throttleMs === undefined) {
      refuse("limits", "must set concurrency, rateLimit or throttleMs");
    }
    const concurrency =
      limits.concurrency === undefined
        ? { set: false, value: null }
        : { set: true, value: checkCount(limits.concurrency, "concurrency", MAX_CONCURRENCY_LIMIT) };
    const rate = resolveRate(limits);
    return this.store.keyLimitsSet(queue, key, concurrency, rate);
  }

  /**
   * Delete every key limit of the queue (no key: its jobs are claimed
   * without key limits again), or one key's override (`options.key`).
   * Deleting a queue's key limits is idempotent: a queue with none is left
   * as it is, so a reset at startup can always run it; resolves true when
   * there were some. Deleting an override that does not exist throws a
   * NotFoundError (the key named is likely a mistake).
   */
  async delete(queue: string, options: { key?: string } = {}): Promise<boolean> {
    checkName(queue, "queue", ValidationError);
    const key = keyOf(options);
    const deleted = await this.store.keyLimitsDelete(queue, key);
    if (deleted === 0 && key !== null) {
      throw new NotFoundError(`key ${JSON.stringify(key)} has no limits of its own in queue ${JSON.stringify(queue)}`);
    }
    return deleted > 0;
  }

  /** The key limits of one queue (default: every queue): each queue's default (`key` null) first, then its overrides. */
  list(queue?: string): Promise<KeyLimitSettings[]> {
    if (queue !== undefined) checkName(queue, "queue", ValidationError);
    return this.store.keyLimitsList(queue ?? null);
  }

  /**
   * What one key of a queue is doing, and why its waiting jobs are not
   * running: paused queue, concurrency limit, rate window full, or nothing.
   *
   * @example
   * const { state, reason } = await conveyor.keyLimits.status("webhooks", "api.example.com");
   */
  async status(queue: string, key: string): Promise<KeyStatus> {
    checkName(queue, "queue", ValidationError);
    checkLimitKey(key, "key");
    return explainKey(queue, key, await this.store.keyStatusGet(queue, key));
  }

  /**
   * The keys of a queue with the most jobs waiting, with their running jobs
   * and limits; `limit` 1..`MAX_TOP_KEYS`.
   * @param limit - how many keys; default `DEFAULT_TOP_KEYS` (10)
   */
  top(queue: string, limit: number = DEFAULT_TOP_KEYS): Promise<KeyLoad[]> {
    checkName(queue, "queue", ValidationError);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_TOP_KEYS) refuse("limit", `must be an integer from 1 to ${MAX_TOP_KEYS}, got ${JSON.stringify(limit)}`);
    return this.store.keyTopByWaiting(queue, limit);
  }

  /** Keys held back by their limits now (at their concurrency cap or with a full rate window), with their ready jobs. */
  heldBack(): Promise<KeyHeldBack[]> {
    return this.store.keyHeldBackList();
  }
}
