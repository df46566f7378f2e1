import { randomUUID } from "node:crypto";
import pg from "pg";
import type { Logger } from "pino";
import { DEFAULT_WAIT_TIMEOUT_MS, MAX_WAIT_TIMEOUT_MS, WAIT_POLL_INTERVAL_MS, WAIT_ROW_MARGIN_MS } from "../core/defaults.js";
import { NotFoundError, ValidationError, WaitAbortedError, WaitTimeoutError } from "../core/errors.js";
import type { JobWithExecutions } from "../core/model.js";
import { isTerminal } from "../core/states.js";
import { type ConnectionConfig, quoteIdent } from "../store/db.js";
import type { Store } from "../store/store.js";
import { checkId, type TenantScope } from "./scope.js";
import { checkKnownFields } from "../core/validate.js";

/** How `waitFor` waits. */
export interface WaitForOptions extends TenantScope {
  /**
   * Give up after this many ms with `WaitTimeoutError`; an integer from 1
   * to `MAX_WAIT_TIMEOUT_MS`.
   * @defaultValue `DEFAULT_WAIT_TIMEOUT_MS` (5 minutes)
   */
  timeoutMs?: number;
  /** Stop waiting when it aborts, with `WaitAbortedError` (its reason as the `cause`). The job is untouched. */
  signal?: AbortSignal;
}

/**
 * Waits for jobs to end. While any wait runs, one connection LISTENs on
 * `<schema>:ended`, where the statement that ends a job announces, at the
 * commit of the end, the ends of the jobs waited for (a row in job_waits
 * each). Each wait also reads its job every `WAIT_POLL_INTERVAL_MS`, so a
 * LISTEN connection that is down, or none (a transaction pooler without
 * `listenConnectionString`), makes the wait slower, never wrong.
 */
export class JobEndWaiter {
  private readonly waits = new Map<string, Set<() => void>>();
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;

  constructor(
    private readonly store: Store,
    private readonly listenConnection: ConnectionConfig | null,
    private readonly log: Logger,
  ) {}

  /** See `ConveyorClient.waitFor`. */
  async waitFor(id: string, options: WaitForOptions = {}): Promise<JobWithExecutions> {
    checkId(id);
    checkKnownFields(options, { tenant: true, timeoutMs: true, signal: true }, "a waitFor option");
    const timeoutMs = options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_WAIT_TIMEOUT_MS) {
      throw new ValidationError(`timeoutMs must be an integer from 1 to ${MAX_WAIT_TIMEOUT_MS}, got ${JSON.stringify(timeoutMs)}`, [
        { path: "timeoutMs", message: `must be an integer from 1 to ${MAX_WAIT_TIMEOUT_MS}` },
      ]);
    }
    const { signal } = options;
    if (signal?.aborted) throw new WaitAbortedError(id, { cause: signal.reason });
    const tenant = options.tenant ?? null;
    const deadline = Date.now() + timeoutMs;
    const waiter = randomUUID();
    let wake = () => {};
    const notified = () => wake();
    await this.subscribe(id, notified);
    let recorded = false;
    try {
      await this.store.jobs.jobWaitAdd(id, waiter, timeoutMs + WAIT_ROW_MARGIN_MS);
      recorded = true;
      for (;;) {
        // The primary's store: a replica may not have the end yet when its notification arrives.
        const job = await this.store.jobs.jobGet(id, tenant);
        if (job === null) throw new NotFoundError(`job ${id} not found`);
        if (isTerminal(job.status)) return { ...job, ...(await this.store.jobs.jobTimeline(id)) };
        if (signal?.aborted) throw new WaitAbortedError(id, { cause: signal.reason });
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new WaitTimeoutError(id, timeoutMs);
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            signal?.removeEventListener("abort", done);
            wake = () => {};
            resolve();
          };
          const timer = setTimeout(done, Math.min(WAIT_POLL_INTERVAL_MS, remaining));
          signal?.addEventListener("abort", done, { once: true });
          wake = done;
        });
        if (signal?.aborted) throw new WaitAbortedError(id, { cause: signal.reason });
      }
    } finally {
      this.unsubscribe(id, notified);
      if (recorded) await this.store.jobs.jobWaitRemove(id, waiter).catch(() => {});
    }
  }

  /** Stop listening (the client closes). */
  async close(): Promise<void> {
    this.waits.clear();
    await this.disconnect();
  }

  private async subscribe(id: string, notified: () => void): Promise<void> {
    let set = this.waits.get(id);
    if (set === undefined) this.waits.set(id, (set = new Set()));
    set.add(notified);
    if (this.listenConnection === null || this.client !== null) return;
    this.connecting ??= this.connect(this.listenConnection).finally(() => {
      this.connecting = null;
    });
    await this.connecting;
  }

  private unsubscribe(id: string, notified: () => void): void {
    const set = this.waits.get(id);
    set?.delete(notified);
    if (set?.size === 0) this.waits.delete(id);
    if (this.waits.size === 0) void this.disconnect();
  }

  /** LISTEN on a connection of its own; on failure the waits poll. */
  private async connect(config: ConnectionConfig): Promise<void> {
    const Client = config.Client ?? pg.Client;
    const client = new Client({ ...config, application_name: "conveyor-wait" }) as pg.Client;
    const lost = (error: unknown) => {
      if (this.client === client) this.client = null;
      this.log.debug({ err: error instanceof Error ? error.message : String(error) }, "waitFor's LISTEN connection lost; polling");
      client.end().catch(() => {});
    };
    client.on("error", lost);
    client.on("notification", (message) => {
      for (const notified of this.waits.get(message.payload ?? "") ?? []) notified();
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(`${this.store.schema}:ended`)}`);
    } catch (error) {
      lost(error);
      return;
    }
    if (this.waits.size === 0) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    client.on("end", () => lost(new Error("connection ended")));
  }

  private async disconnect(): Promise<void> {
    await this.connecting;
    if (this.waits.size > 0) return;
    const client = this.client;
    this.client = null;
    if (client !== null) await client.end().catch(() => {});
  }
}
