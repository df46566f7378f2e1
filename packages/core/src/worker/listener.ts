import pg from "pg";
import type { Logger } from "pino";
import { ERROR_BACKOFF_MAX_MS, ERROR_BACKOFF_MIN_MS } from "../core/defaults.js";
import { type ConnectionConfig, quoteIdent } from "../store/db.js";

/** Answer within this time or the LISTEN connection counts as dead (a black-holed socket never errors). */
const PING_TIMEOUT_MS = 5_000;

/**
 * Holds one dedicated connection LISTENing on the schema's two channels:
 * `<schema>:jobs` (work is ready: `onNotify(queue)`) and `<schema>:cancel`
 * (a running job's cancel was requested: `onCancel(executionId)`, sent by
 * the cancel's statement, at its commit). A lost connection is noticed (by
 * its error/end events, or a ping that goes unanswered) and re-established
 * with back-off; the worker keeps polling meanwhile, so nothing waits on it.
 */
export class NotificationListener {
  private client: pg.Client | null = null;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private backoffMs = ERROR_BACKOFF_MIN_MS;
  /** Times a connection was (re-)established; visible for tests and logs. */
  connects = 0;

  constructor(
    private readonly connectionConfig: ConnectionConfig,
    private readonly schema: string,
    private readonly onNotify: (queue: string) => void,
    private readonly log: Logger,
    private readonly onCancel: (executionId: string) => void = () => {},
  ) {}

  get channel(): string {
    return `${this.schema}:jobs`;
  }

  /** Where cancels of running jobs are announced, with the attempt's execution id. */
  get cancelChannel(): string {
    return `${this.schema}:cancel`;
  }

  get connected(): boolean {
    return this.client !== null;
  }

  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    // The connection's own client class when it has one (a host list: the writable host).
    const Client = this.connectionConfig.Client ?? pg.Client;
    const client = new Client({ ...this.connectionConfig, application_name: "conveyor-listener" }) as pg.Client;
    client.on("error", (error) => this.lost(client, error));
    client.on("end", () => this.lost(client, new Error("connection ended")));
    client.on("notification", (message) => {
      if (message.channel === this.cancelChannel) this.onCancel(message.payload ?? "");
      else this.onNotify(message.payload ?? "");
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(this.channel)}; LISTEN ${quoteIdent(this.cancelChannel)}`);
    } catch (error) {
      this.lost(client, error);
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.connects += 1;
    this.backoffMs = ERROR_BACKOFF_MIN_MS;
    if (this.connects > 1) this.log.info({ channel: this.channel }, "LISTEN connection re-established");
    // Anything notified while we were away is picked up by this wake-up.
    this.onNotify("*");
  }

  /** Check the connection answers; a silent one is dropped and replaced. */
  async ping(): Promise<void> {
    const client = this.client;
    if (!client) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    });
    try {
      await Promise.race([client.query("SELECT 1"), timeout]);
    } catch (error) {
      this.lost(client, error);
    } finally {
      clearTimeout(timer);
    }
  }

  private lost(client: pg.Client, error: unknown): void {
    if (this.client !== null && this.client !== client) return; // an old connection's late event
    const wasConnected = this.client === client;
    this.client = null;
    // end() on a broken socket can hang; destroy the stream so nothing lingers.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    client.end().catch(() => {});
    if (this.stopped || this.reconnectTimer) return;
    const message = error instanceof Error ? error.message : String(error);
    this.log.warn({ err: message, retryInMs: this.backoffMs, wasConnected }, "LISTEN connection lost; polling meanwhile");
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, this.backoffMs);
    this.backoffMs = Math.min(this.backoffMs * 2, ERROR_BACKOFF_MAX_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => {});
  }
}
