import { createServer, type Server, Socket } from "node:net";
import type { AddressInfo } from "node:net";

/** What the proxy does with traffic right now. */
export type ProxyMode =
  /** Forward both ways. */
  | { kind: "pass" }
  /** Forward, each chunk held back this long (a slow network). */
  | { kind: "delay"; ms: number }
  /**
   * Accept and read, forward nothing: a partition. What is sent meanwhile is
   * held and delivered when the partition heals, as TCP retransmission
   * would, so writes a stalled worker made during the partition arrive late.
   */
  | { kind: "blackhole" };

/** One proxied connection. `tags` come from the client's PostgreSQL startup message. */
export interface ProxiedConnection {
  readonly id: number;
  /** Startup parameters (`user`, `database`, `application_name`…); empty until the startup message is read. */
  readonly tags: Readonly<Record<string, string>>;
}

interface Pair extends ProxiedConnection {
  tags: Record<string, string>;
  client: Socket;
  upstream: Socket;
  /** Client bytes until the startup message is complete (then null). */
  startup: Buffer | null;
}

/**
 * A TCP proxy on 127.0.0.1 between workers and PostgreSQL that a test can
 * turn into a bad network on command: pass, delay, black-hole (held bytes
 * delivered on heal), or reset (RST) connections. Each connection is tagged
 * with the parameters of its PostgreSQL startup message, so a test can reset
 * or refuse just one kind of connection (say, `application_name =
 * conveyor-listener`, the LISTEN connection).
 */
export class FaultProxy {
  private server: Server | null = null;
  private mode: ProxyMode = { kind: "pass" };
  private readonly connections = new Set<Pair>();
  private held: Array<{ chunk: Buffer; to: Socket }> = [];
  /** Per destination, chunks waiting for their delay to pass; later chunks queue behind them (TCP keeps order). */
  private readonly delayed = new Map<Socket, { items: Array<{ chunk: Buffer; due: number }>; timer: NodeJS.Timeout | null }>();
  private refuse: ((connection: ProxiedConnection) => boolean) | null = null;
  private holdReplies: ((connection: ProxiedConnection) => boolean) | null = null;
  /** Server bytes held back from clients by `holdRepliesTo`, in arrival order. */
  private heldReplies: Array<{ chunk: Buffer; to: Socket }> = [];
  private nextId = 1;
  port = 0;
  /** Connections accepted, and connections this proxy reset, since start. */
  accepted = 0;
  resets = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Listen on `port` of 127.0.0.1 (0: one the kernel picks); resolves with the port. */
  async start(port = 0): Promise<number> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(port, "127.0.0.1", resolve);
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this.port;
  }

  /** Change how traffic is treated from now on (open connections included). Healing delivers held bytes in order. */
  set(mode: ProxyMode): void {
    this.mode = mode;
    if (mode.kind === "blackhole") return;
    const held = this.held;
    this.held = [];
    for (const { chunk, to } of held) this.forward(chunk, to);
  }

  /** Reset (RST) the open connections `which` selects (default all); returns how many. */
  reset(which: (connection: ProxiedConnection) => boolean = () => true): number {
    let count = 0;
    for (const pair of [...this.connections]) {
      if (!which(pair)) continue;
      this.destroy(pair, true);
      count += 1;
    }
    return count;
  }

  /** Reset every open connection. */
  resetAll(): number {
    return this.reset();
  }

  /**
   * Reset new connections that `which` selects as soon as their startup
   * message shows who they are (null: accept all again).
   */
  refuseWhere(which: ((connection: ProxiedConnection) => boolean) | null): void {
    this.refuse = which;
  }

  /**
   * From now on, hold back what the server sends to the connections `which`
   * selects (their own bytes still reach the server): a statement runs and
   * commits, and its answer waits. `releaseReplies()` delivers what was held, in order.
   */
  holdRepliesTo(which: (connection: ProxiedConnection) => boolean): void {
    this.holdReplies = which;
  }

  /** Stop holding replies and deliver every held one, in order. */
  releaseReplies(): void {
    this.holdReplies = null;
    const held = this.heldReplies;
    this.heldReplies = [];
    for (const { chunk, to } of held) this.forward(chunk, to);
  }

  /** Open connections (tagged once their startup message was read). */
  list(): ProxiedConnection[] {
    return [...this.connections].map(({ id, tags }) => ({ id, tags: { ...tags } }));
  }

  get openConnections(): number {
    return this.connections.size;
  }

  async stop(): Promise<void> {
    this.refuse = null;
    this.resetAll();
    this.held = [];
    this.holdReplies = null;
    this.heldReplies = [];
    for (const queue of this.delayed.values()) if (queue.timer) clearTimeout(queue.timer);
    this.delayed.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = null;
  }

  private accept(client: Socket): void {
    this.accepted += 1;
    const upstream = new Socket();
    const pair: Pair = { id: this.nextId++, tags: {}, client, upstream, startup: Buffer.alloc(0) };
    this.connections.add(pair);
    const drop = () => this.destroy(pair, false);
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    upstream.connect(this.targetPort, this.targetHost);
    client.on("data", (chunk: Buffer) => {
      if (pair.startup) this.readStartup(pair, chunk);
      if (this.connections.has(pair)) this.forward(chunk, upstream);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (this.holdReplies?.(pair)) this.heldReplies.push({ chunk, to: client });
      else this.forward(chunk, client);
    });
  }

  /**
   * The first client message is the startup packet: int32 length, int32
   * protocol version, then `name\0value\0` pairs ending in `\0`. (An
   * SSLRequest comes first when the client wants TLS; these tests never do.)
   */
  private readStartup(pair: Pair, chunk: Buffer): void {
    const buffer = Buffer.concat([pair.startup!, chunk]);
    if (buffer.length < 8) {
      pair.startup = buffer;
      return;
    }
    const length = buffer.readInt32BE(0);
    if (buffer.length < length) {
      pair.startup = buffer;
      return;
    }
    pair.startup = null;
    const fields = buffer.subarray(8, length).toString("utf8").split("\0");
    for (let i = 0; i + 1 < fields.length && fields[i] !== ""; i += 2) pair.tags[fields[i]!] = fields[i + 1]!;
    if (this.refuse?.(pair)) this.destroy(pair, true);
  }

  private destroy(pair: Pair, reset: boolean): void {
    if (!this.connections.delete(pair)) return;
    if (reset) {
      this.resets += 1;
      pair.client.resetAndDestroy();
      pair.upstream.resetAndDestroy();
    } else {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    this.held = this.held.filter(({ to }) => to !== pair.client && to !== pair.upstream);
    this.heldReplies = this.heldReplies.filter(({ to }) => to !== pair.client);
    for (const socket of [pair.client, pair.upstream]) {
      const queue = this.delayed.get(socket);
      if (queue?.timer) clearTimeout(queue.timer);
      this.delayed.delete(socket);
    }
  }

  private forward(chunk: Buffer, to: Socket): void {
    const mode = this.mode;
    if (mode.kind === "blackhole") {
      this.held.push({ chunk, to });
      return;
    }
    const delayMs = mode.kind === "delay" ? mode.ms : 0;
    let queue = this.delayed.get(to);
    if (delayMs === 0 && !queue) {
      if (to.writable) to.write(chunk);
      return;
    }
    if (!queue) {
      queue = { items: [], timer: null };
      this.delayed.set(to, queue);
    }
    queue.items.push({ chunk, due: Date.now() + delayMs });
    this.pump(to);
  }

  private pump(to: Socket): void {
    const queue = this.delayed.get(to);
    if (!queue || queue.timer) return;
    const head = queue.items[0];
    if (!head) {
      this.delayed.delete(to);
      return;
    }
    queue.timer = setTimeout(() => {
      queue.timer = null;
      while (queue.items[0] && queue.items[0].due <= Date.now()) {
        const { chunk } = queue.items.shift()!;
        if (to.writable) to.write(chunk);
      }
      this.pump(to);
    }, Math.max(0, head.due - Date.now()));
  }
}
