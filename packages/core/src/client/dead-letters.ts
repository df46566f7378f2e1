import { NotFoundError } from "../core/errors.js";
import type { DeadLetter, Job, Page } from "../core/model.js";
import type { DeadLetterStore } from "../store/dead-letter-store.js";
import { decodeCursor } from "./cursor.js";
import { checkLimit, pageOf } from "./paging.js";
import { checkId, type TenantScope, scopeTenant } from "./scope.js";
import { checkKnownFields } from "../core/validate.js";

/** Which dead letters `deadLetters.list` lists: every field optional, all given must match. */
export interface ListDeadLettersFilter extends TenantScope {
  /** Only dead letters of this kind. */
  kind?: string;
  /** Only dead letters from this queue. */
  queue?: string;
  /**
   * Page size, 1 to `MAX_LIST_LIMIT` (1000).
   * @defaultValue `DEFAULT_LIST_LIMIT` (50)
   */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string | null;
}

/**
 * The dead-letter queue (`conveyor.deadLetters`): jobs that will not
 * succeed, kept with their attempt history until requeued, purged, or
 * pruned (`prune`'s `deadLetterMs`, default `DEFAULT_RETENTION_DEAD_LETTER_MS`, 30 days).
 *
 * @example
 * const { items } = await conveyor.deadLetters.list({ kind: "email.send" });
 * for (const dead of items) await conveyor.deadLetters.requeue(dead.id);
 */
export class DeadLetters {
  /** @internal Made by the client: `store` writes, `reader` reads (a read replica's when the client has one). */
  constructor(
    private readonly store: DeadLetterStore,
    private readonly reader: DeadLetterStore,
  ) {}

  /** Dead letters, newest first, with cursor pagination (`filter.limit` defaults to `DEFAULT_LIST_LIMIT`). */
  async list(filter: ListDeadLettersFilter = {}): Promise<Page<DeadLetter>> {
    checkKnownFields(filter, { tenant: true, kind: true, queue: true, limit: true, cursor: true }, "a dead-letter list filter");
    const limit = checkLimit(filter.limit);
    const items = await this.reader.deadLetterList({
      tenant: filter.tenant,
      kind: filter.kind,
      queue: filter.queue,
      beforeId: decodeCursor(filter.cursor),
      limit: limit + 1,
    });
    return pageOf(items, limit);
  }

  /** A dead letter with its attempt history, or null when it does not exist (or belongs to another tenant). */
  async get(id: string, scope: TenantScope = {}): Promise<DeadLetter | null> {
    checkId(id);
    return this.reader.deadLetterGet(id, scopeTenant(scope));
  }

  /** Put a dead-lettered job back in the queue with fresh attempts (same job id). Throws NotFoundError when there is none. */
  async requeue(id: string, scope: TenantScope = {}): Promise<Job> {
    checkId(id);
    const job = await this.store.deadLetterRequeue(id, scopeTenant(scope));
    if (!job) throw new NotFoundError(`dead letter ${id} not found`);
    return job;
  }

  /** Delete a dead-lettered job for good, with its history. Throws NotFoundError when there is none. */
  async purge(id: string, scope: TenantScope = {}): Promise<void> {
    checkId(id);
    if (!(await this.store.deadLetterPurge(id, scopeTenant(scope)))) throw new NotFoundError(`dead letter ${id} not found`);
  }
}
