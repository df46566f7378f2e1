import pg from "pg";
import { ConfigError, DatabaseReadOnlyError } from "../core/errors.js";

/**
 * Several PostgreSQL hosts in one URL, as libpq writes them
 * (`postgres://user@db1:5432,db2:5432/app`), for a primary and its
 * standbys: the driver (pg) takes one host, so Conveyor picks one per new
 * connection and keeps only a connection whose server takes writes
 * (`pg_is_in_recovery()` false). After a failover, connections to the old
 * primary fail (it is down) or are refused (it came back as a standby),
 * and the next ones find the promoted server: no restart is needed.
 */
export interface HostList {
  /** One URL per host, each otherwise the given URL. */
  readonly urls: readonly string[];
}

/** The hosts of a multi-host URL; null for an ordinary one-host URL. Throws ConfigError when a host is malformed. */
export function parseHostList(connectionString: string): HostList | null {
  const match = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/.exec(connectionString);
  if (!match) return null;
  const [, scheme, credentials = "", hosts, rest] = match as unknown as [string, string, string | undefined, string, string];
  if (!hosts.includes(",")) return null;
  const urls = hosts.split(",").map((host) => {
    if (!/^(\[[0-9a-fA-F:]+\]|[^:[\]]+)(:\d{1,5})?$/.test(host)) {
      throw new ConfigError(`connectionString: host ${JSON.stringify(host)} in a host list is not host or host:port`);
    }
    return `${scheme}${credentials}${host}${rest}`;
  });
  return { urls };
}

/**
 * Which host the next connection tries: the last one that gave a writable
 * connection, and the next in the list after one fails. Shared by every
 * connection of one client (its pool, a worker's claim and LISTEN connections).
 */
export class HostSelector {
  private index = 0;

  constructor(readonly hosts: HostList) {}

  /** The URL the next connection tries. */
  current(): string {
    return this.hosts.urls[this.index]!;
  }

  /** `url` failed (unreachable, or read-only): move on to the next host, unless another connection already did. */
  failed(url: string): void {
    if (this.hosts.urls[this.index] === url) this.index = (this.index + 1) % this.hosts.urls.length;
  }
}

/**
 * A pg.Client class whose connections go to the selector's current host
 * and are kept only when that server takes writes; for pg.Pool's `Client`
 * option and for a worker's LISTEN connection (which a standby would
 * accept, but whose NOTIFYs come from the primary only).
 */
export function writableClientClass(selector: HostSelector): typeof pg.Client {
  class WritableClient extends pg.Client {
    private readonly target: string;

    constructor(config?: string | pg.ClientConfig) {
      const target = selector.current();
      super({ ...(typeof config === "string" ? {} : config), connectionString: target });
      this.target = target;
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, client: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, client: pg.Client) => void)): Promise<pg.Client> | void {
      const connecting = this.connectWritable().then(() => this as pg.Client);
      if (!callback) return connecting;
      const done = callback as (err: Error | null, client?: pg.Client) => void;
      connecting.then((client) => done(null, client), (error: Error) => done(error));
    }

    private async connectWritable(): Promise<void> {
      try {
        await super.connect();
      } catch (error) {
        selector.failed(this.target);
        throw error;
      }
      let inRecovery: boolean;
      try {
        inRecovery = (await this.query<{ in_recovery: boolean }>("SELECT pg_is_in_recovery() AS in_recovery")).rows[0]!.in_recovery;
      } catch (error) {
        selector.failed(this.target);
        await this.end().catch(() => {});
        throw error;
      }
      if (inRecovery) {
        selector.failed(this.target);
        await this.end().catch(() => {});
        throw new DatabaseReadOnlyError("the database refuses writes: this host is a standby (pg_is_in_recovery); trying the next host");
      }
    }
  }
  return WritableClient;
}
