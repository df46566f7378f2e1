import type { DeadLetter, Job } from "../core/model.js";
import type { Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { rowToDeadLetter, rowToJob } from "./rows.js";
import { runQuery } from "./run-query.js";

/** The dead-letter queue: jobs that will not succeed, with their history (statements in `sql/dead-letters.ts`). */
export class DeadLetterStore {
  constructor(
    private readonly pool: Queryable,
    private readonly q: Queries,
  ) {}

  async deadLetterList(
    filter: { tenant?: string | null; kind?: string | null; queue?: string | null; beforeId?: string | null; limit: number },
  ): Promise<DeadLetter[]> {
    const { rows } = await runQuery(
      this.pool,
      this.q.deadLetterList,
      [filter.tenant ?? null, filter.kind ?? null, filter.queue ?? null, filter.beforeId ?? null, filter.limit],
    );
    return rows.map(rowToDeadLetter);
  }

  async deadLetterGet(id: string, tenant: string | null): Promise<DeadLetter | null> {
    const { rows } = await runQuery(this.pool, this.q.deadLetterGet, [id, tenant]);
    return rows[0] ? rowToDeadLetter(rows[0]) : null;
  }

  async deadLetterRequeue(id: string, tenant: string | null): Promise<Job | null> {
    const { rows } = await runQuery(this.pool, this.q.deadLetterRequeue, [id, tenant]);
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  async deadLetterPurge(id: string, tenant: string | null): Promise<boolean> {
    const { rows } = await runQuery(this.pool, this.q.deadLetterPurge, [id, tenant]);
    return rows.length > 0;
  }
}
