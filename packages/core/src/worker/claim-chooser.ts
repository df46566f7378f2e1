import {
  CLAIM_RESTRICTIONS_REFRESH_MS,
  KEY_CLAIMS_PER_ROUND,
  KEY_SHARE_PER_CLAIM,
  MAX_KEYS_PER_CLAIM,
  MIN_KEYS_PER_CLAIM,
} from "../core/defaults.js";
import type { ClaimedJob } from "../core/model.js";
import type { Fairness } from "../core/queue-settings.js";
import type { ClaimStore } from "../store/claim-store.js";
import type { ClaimRequest, LimitedClaimStore } from "../store/limited-claim-store.js";
import { isLockTimeout } from "../store/pg-errors.js";
import type { ClaimRestrictions, QueueSettingsStore } from "../store/queue-settings-store.js";
import { TestSignal } from "./test-signal.js";

/** What the claim chooser reports to tests (workerTestSignals in test-signals.ts); off until `init()`. */
export class ClaimChooserTestSignals {
  /** A read of the claim restrictions ended and the view was replaced by what it found. A read that failed reports nothing. */
  readonly restrictionsRead = new TestSignal<ClaimRestrictions>();

  init(): void {
    this.restrictionsRead.init();
  }
}

/**
 * Decides which claim statements a worker runs, so queues without limits
 * keep the one-statement fast path:
 * - fairness off and no tenant caps: `jobClaim` (skips paused and limited queues);
 * - fairness "tenant", or any tenant cap set: the tenant-fair claim instead;
 * - then, with slots still free, each limited queue this worker serves, one
 *   short transaction each (its settings row locked, so caps hold globally);
 * - then, with slots still free, each key-limited queue it serves
 *   (`jobClaimByKey`), walking the queue's keys round-robin from where this
 *   worker's last claim of it stopped.
 * A worker bound to queues that are all limited (by queue or key) skips the
 * fast claim: it could only step over their ready jobs.
 * Which queues are limited is read at most every CLAIM_RESTRICTIONS_REFRESH_MS
 * (one tiny query, beside a claim rather than before it), so a new limit
 * reaches a worker within about a second and a claim.
 * A new queue limit or pause is never exceeded meanwhile (the fast path reads
 * its exclusion in every statement; the queue just waits up to a second for
 * its first limited claim). A new tenant cap is honoured by a worker on the
 * fast path from its next refresh, so for up to a second it may be exceeded.
 */
export class ClaimChooser {
  private restrictions: ClaimRestrictions = { limitedQueues: [], tenantCaps: false, keyLimitedQueues: [] };
  /** Per key-limited queue, the key this worker's next claim walks from. */
  private readonly keyCursors = new Map<string, string | null>();
  private readAt = Number.NEGATIVE_INFINITY;
  /** For the last claim's jobs, in order, when each one's statement was sent (sentAtOf). */
  private sentAt: number[] = [];
  private refreshing: Promise<void> | null = null;
  /** For tests: each read of the restrictions reported as it ends (workerTestSignals). */
  readonly testSignals = new ClaimChooserTestSignals();

  constructor(
    private readonly jobs: ClaimStore,
    private readonly limited: LimitedClaimStore,
    private readonly settings: QueueSettingsStore,
    private readonly fairness: Fairness,
    /** Told of each cap skipped for a round because its lock was held too long: a queue name, or "tenants". */
    private readonly onLockTimeout: (cap: string) => void,
  ) {}

  /**
   * One claim round. A capped claim that timed out waiting for its cap's
   * lock (held by something other than a claim, which holds it for a few
   * ms) skips that cap for this round and goes on with the others: one
   * stuck lock slows a round by CLAIM_LOCK_TIMEOUT_MS, never stops it.
   */
  async claim(request: ClaimRequest): Promise<ClaimedJob[]> {
    const { limitedQueues, tenantCaps, keyLimitedQueues } = await this.current();
    const jobs: ClaimedJob[] = [];
    this.sentAt = [];
    const onlyLimited =
      request.queues !== null && request.queues.every((queue) => limitedQueues.includes(queue) || keyLimitedQueues.includes(queue));
    try {
      if (!onlyLimited) {
        await this.timed(jobs, () =>
          this.fairness === "tenant" || tenantCaps
            ? this.limited.jobClaimFair(request)
            : this.jobs.jobClaim(request.workerId, request.limit, request.kinds, request.queues, request.leaseMs),
        );
      }
    } catch (error) {
      if (!isLockTimeout(error)) throw error;
      this.onLockTimeout("tenants");
    }
    // Each limited queue in turn while slots are free: queue caps, then key limits.
    const rounds: Array<[string, () => Promise<void>]> = [
      ...limitedQueues.map((queue): [string, () => Promise<void>] => [
        queue,
        async () => {
          await this.timed(jobs, () => this.limited.jobClaimFromLimitedQueue(queue, { ...request, limit: request.limit - jobs.length }));
        },
      ]),
      ...keyLimitedQueues.map((queue): [string, () => Promise<void>] => [queue, () => this.claimByKey(queue, request, jobs)]),
    ];
    for (const [queue, claimFrom] of rounds) {
      if (request.limit - jobs.length <= 0) break;
      if (request.queues !== null && !request.queues.includes(queue)) continue;
      try {
        await claimFrom();
      } catch (error) {
        if (isLockTimeout(error)) {
          this.onLockTimeout(queue);
          continue;
        }
        // Jobs already claimed must still be run: hand them over, and let the
        // next round meet the error again (the claim loop logs and backs off).
        if (jobs.length === 0) throw error;
        break;
      }
    }
    return jobs;
  }

  /**
   * Claim from one key-limited queue into `jobs`, walking on from this
   * worker's cursor. One claim walks one key per KEY_SHARE_PER_CLAIM slots
   * (MIN_KEYS_PER_CLAIM to MAX_KEYS_PER_CLAIM keys)
   * and takes at most an even share from each, so keys at their limit, or
   * with fewer jobs than their share, leave it short; then it walks on, up
   * to KEY_CLAIMS_PER_ROUND claims. A round that comes back short makes the
   * worker wait for a notification or its poll interval, as for a drained
   * queue, so a short claim must mean that little is claimable.
   */
  private async claimByKey(queue: string, request: ClaimRequest, jobs: ClaimedJob[]): Promise<void> {
    for (let round = 0; round < KEY_CLAIMS_PER_ROUND; round++) {
      const free = request.limit - jobs.length;
      if (free <= 0) return;
      const cursor = this.keyCursors.get(queue) ?? null;
      const walk = Math.min(MAX_KEYS_PER_CLAIM, Math.max(MIN_KEYS_PER_CLAIM, Math.ceil(free / KEY_SHARE_PER_CLAIM)));
      const sentAt = performance.now();
      const claimed = await this.limited.jobClaimByKey(queue, { ...request, limit: free }, cursor, walk);
      this.keyCursors.set(queue, claimed.nextKey);
      this.take(jobs, claimed.jobs, sentAt);
      // No key with ready jobs, or the walk came back to where it started.
      if (claimed.nextKey === null || claimed.nextKey === cursor) return;
    }
  }

  /**
   * When the statement that claimed the last claim's `index`-th job was
   * sent (performance.now()): its lease's local deadline runs from there,
   * not from the round's start, so a round slowed by one cap's lock does
   * not make the jobs of its earlier statements look late. Kept as one
   * number per job of the round, not as an entry per job object.
   */
  sentAtOf(index: number): number | undefined {
    return this.sentAt[index];
  }

  /** Run one claim statement and add what it claimed to `jobs`, noting when it was sent (sentAtOf). */
  private async timed(jobs: ClaimedJob[], claim: () => Promise<ClaimedJob[]>): Promise<void> {
    const sentAt = performance.now();
    this.take(jobs, await claim(), sentAt);
  }

  /** Add one statement's jobs to the round's, each with the time that statement was sent. */
  private take(jobs: ClaimedJob[], claimed: readonly ClaimedJob[], sentAt: number): void {
    for (const job of claimed) {
      jobs.push(job);
      this.sentAt.push(sentAt);
    }
  }

  /**
   * The restrictions as last read. Only the first claim waits for the read;
   * after that a stale view is refreshed beside the claim, which uses the
   * view it has: awaited, the read would add a round trip to one claim a
   * second, and so to an idle worker's slowest enqueue-to-start times. A
   * read that fails is tried again by the next claim.
   */
  private async current(): Promise<ClaimRestrictions> {
    if (this.readAt === Number.NEGATIVE_INFINITY) await (this.refreshing ?? this.refresh());
    else if (performance.now() - this.readAt >= CLAIM_RESTRICTIONS_REFRESH_MS) void (this.refreshing ?? this.refresh());
    return this.restrictions;
  }

  private refresh(): Promise<void> {
    const startedAt = performance.now();
    this.refreshing = this.settings
      .claimRestrictions()
      .then((restrictions) => {
        this.restrictions = restrictions;
        this.readAt = startedAt;
        this.testSignals.restrictionsRead.signal(restrictions);
      })
      .finally(() => {
        this.refreshing = null;
      });
    // The first read's error reaches its claim (and the claim loop's back-off); later ones wait for the next claim.
    this.refreshing.catch(() => {});
    return this.refreshing;
  }
}
