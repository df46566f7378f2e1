import { CLOCK_RESYNC_MS } from "../core/defaults.js";
import type { Queryable } from "./db.js";
import type { BoundQuery, Queries } from "./queries.js";
import { runQuery } from "./run-query.js";

/**
 * The database server's clock, read from this process: the local clock plus
 * an offset measured against the server. Job and execution ids are UUIDv7,
 * whose first 48 bits are a time, and listings, pages and the dashboard's
 * chart order by id. Made from the local clock, ids from a host whose clock
 * is an hour behind would list an hour back and fall outside the chart's
 * window; made from this one, every host's ids follow the one clock that
 * also writes `created_at` and `finished_at`.
 *
 * The offset is measured with one round trip (the server's time against
 * the midpoint of the local send and receive), at first use and again
 * every CLOCK_RESYNC_MS, so it is off by at most half a round trip plus the
 * drift between two measurements. A failed measurement keeps the last offset
 * (0 before the first) and is tried again at the next use.
 */
export class DatabaseClock {
  private offsetMs = 0;
  private measuredAt = Number.NEGATIVE_INFINITY;
  private measuring: Promise<void> | null = null;
  private readonly read: BoundQuery;

  constructor(
    private readonly db: Queryable,
    queries: Queries,
  ) {
    this.read = queries.clockRead;
  }

  /** Now by the server's clock, in Unix ms; waits for the first measurement (and only that one). */
  async now(): Promise<number> {
    if (this.measuredAt === Number.NEGATIVE_INFINITY) await (this.measuring ?? this.measure()).catch(() => {});
    return this.nowKnown();
  }

  /** Now by the offset last measured (the local clock before any); starts a new measurement in the background when it is stale. */
  nowKnown(): number {
    if (performance.now() - this.measuredAt >= CLOCK_RESYNC_MS && !this.measuring) void this.measure().catch(() => {});
    return Date.now() + this.offsetMs;
  }

  private measure(): Promise<void> {
    this.measuring = (async () => {
      const sentAt = Date.now();
      const { rows } = await runQuery(this.db, this.read, []);
      const receivedAt = Date.now();
      this.offsetMs = Math.round(Number(rows[0].now_ms) - (sentAt + receivedAt) / 2);
      this.measuredAt = performance.now();
    })().finally(() => {
      this.measuring = null;
    });
    return this.measuring;
  }
}
