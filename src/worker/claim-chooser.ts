import { CLAIM_RESTRICTIONS_REFRESH_MS } from "../core/defaults.js";
import type { ClaimedJob } from "../core/model.js";
import type { Fairness } from "../core/queue-settings.js";
import type { ClaimStore } from "../store/claim-store.js";
import type { ClaimRequest, LimitedClaimStore } from "../store/limited-claim-store.js";
import type { ClaimRestrictions, QueueSettingsStore } from "../store/queue-settings-store.js";

/**
 * Decides which claim statements a worker runs, so queues without limits
 * keep the one-statement fast path:
 * - fairness off and no tenant caps: `jobClaim` (skips paused and limited queues);
 * - fairness "tenant", or any tenant cap set: the tenant-fair claim instead;
 * - then, with slots still free, each limited queue this worker serves, one
 *   short transaction each (its settings row locked, so caps hold globally).
 * Which queues are limited is read at most every CLAIM_RESTRICTIONS_REFRESH_MS
 * (one tiny query), so a new limit reaches a worker within about a second.
 * A new queue limit or pause is never exceeded meanwhile (the fast path reads
 * its exclusion in every statement; the queue just waits up to a second for
 * its first limited claim). A new tenant cap is honoured by a worker on the
 * fast path from its next refresh, so for up to a second it may be exceeded.
 */
export class ClaimChooser {
  private restrictions: ClaimRestrictions = { limitedQueues: [], tenantCaps: false };
  private readAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly jobs: ClaimStore,
    private readonly limited: LimitedClaimStore,
    private readonly settings: QueueSettingsStore,
    private readonly fairness: Fairness,
  ) {}

  async claim(request: ClaimRequest): Promise<ClaimedJob[]> {
    const { limitedQueues, tenantCaps } = await this.current();
    const jobs =
      this.fairness === "tenant" || tenantCaps
        ? await this.limited.claimFair(request)
        : await this.jobs.jobClaim(request.workerId, request.limit, request.kinds, request.queues, request.leaseMs);
    for (const queue of limitedQueues) {
      const free = request.limit - jobs.length;
      if (free <= 0) break;
      if (request.queues !== null && !request.queues.includes(queue)) continue;
      try {
        jobs.push(...(await this.limited.claimFromLimitedQueue(queue, { ...request, limit: free })));
      } catch (error) {
        // Jobs already claimed must still be run: hand them over, and let the
        // next round meet the error again (the claim loop logs and backs off).
        if (jobs.length === 0) throw error;
        break;
      }
    }
    return jobs;
  }

  private async current(): Promise<ClaimRestrictions> {
    const now = performance.now();
    if (now - this.readAt >= CLAIM_RESTRICTIONS_REFRESH_MS) {
      this.restrictions = await this.settings.claimRestrictions();
      this.readAt = now;
    }
    return this.restrictions;
  }
}
