import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { KeyHeldBack, QueueOverview } from "conveyor-jobs";
import { KEY_METRICS_TOP } from "conveyor-jobs/server";

/**
 * The API's Prometheus metrics, in a registry of its own (so an API and a
 * worker in one process never collide): HTTP requests and latency by route
 * template, jobs enqueued, events sent and the jobs they woke, and queue
 * depth read from the database at scrape time.
 */
export class ApiMetrics {
  /** The registry every metric below is in. */
  readonly registry: Registry;
  /** `conveyor_http_requests_total{method,route,status}`: requests answered. */
  readonly requests: Counter<"method" | "route" | "status">;
  /** `conveyor_http_request_duration_seconds{method,route}`: request latency. */
  readonly duration: Histogram<"method" | "route">;
  /** `conveyor_jobs_enqueued_total{kind,queue}`: jobs created through the API (idempotent repeats not counted). */
  readonly enqueued: Counter<"kind" | "queue">;
  /** `conveyor_events_sent_total`: events sent through the API (`POST /v1/events`). */
  readonly eventsSent: Counter;
  /** `conveyor_events_delivered_total`: jobs those events woke (each a wait that received one). */
  readonly eventsDelivered: Counter;
  /**
   * `conveyor_queue_depth{queue,status}`: jobs per queue and state, read at
   * scrape time: exact up to `QUEUE_EXACT_COUNT_LIMIT` (1,000) per queue
   * and state, the planner's estimate beyond, so a scrape never counts a
   * deep queue through.
   */
  readonly queueDepth: Gauge<"queue" | "status">;
  /** `conveyor_queue_depth_up`: 1 when the last depth read succeeded, else 0. */
  readonly queueDepthUp: Gauge;
  /** `conveyor_flow_callbacks{state}`: batch callbacks waiting, released or skipped, read at scrape time. */
  readonly flowCallbacks: Gauge<"state">;
  /** `conveyor_waits_open`: durable jobs waiting for an event, read at scrape time (up to `OPEN_WAITS_COUNT_LIMIT`). */
  readonly waitsOpen: Gauge;
  /** `conveyor_key_limit_held_jobs{queue}`: ready jobs held back by their key's limit, read at scrape time. */
  readonly keyHeldJobs: Gauge<"queue">;
  /** `conveyor_keys_at_limit{queue}`: keys at their concurrency limit or with a full rate window, read at scrape time. */
  readonly keysAtLimit: Gauge<"queue">;
  /** `conveyor_key_at_limit_held_jobs{queue,key}`: the KEY_METRICS_TOP (10) keys per queue holding back the most jobs, so the label set stays bounded. */
  readonly keyAtLimitHeldJobs: Gauge<"queue" | "key">;

  /** @internal `buildApp` makes one; read it as `app.conveyorMetrics`. */
  constructor(overview: QueueOverview, log: Logger, registry: Registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    this.requests = new Counter({
      name: "conveyor_http_requests_total",
      help: "HTTP requests answered, by route template and status",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.duration = new Histogram({
      name: "conveyor_http_request_duration_seconds",
      help: "Time to answer HTTP requests, by route template",
      labelNames: ["method", "route"],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.enqueued = new Counter({
      name: "conveyor_jobs_enqueued_total",
      help: "Jobs created through the API (idempotent repeats are not counted)",
      labelNames: ["kind", "queue"],
      registers,
    });
    // No labels: event names and keys are the caller's, so they would make the label set unbounded.
    this.eventsSent = new Counter({
      name: "conveyor_events_sent_total",
      help: "Events sent through the API (POST /v1/events)",
      registers,
    });
    this.eventsDelivered = new Counter({
      name: "conveyor_events_delivered_total",
      help: "Jobs woken by events sent through the API: each had a wait that received one",
      registers,
    });
    // Both gauges below are filled by one query per scrape: prom-client
    // collects metrics concurrently, so they share the read in flight.
    let pending: Promise<Array<{ queue: string; status: string; count: number; estimated: boolean }> | null> | undefined;
    const readDepth = () =>
      (pending ??= overview
        .queueDepth()
        .catch((error: unknown) => {
          // A database outage must not fail the whole scrape: the HTTP metrics still matter.
          log.warn({ err: error }, "queue depth unavailable for /metrics");
          return null;
        })
        .finally(() => {
          pending = undefined;
        }));
    this.queueDepth = new Gauge({
      name: "conveyor_queue_depth",
      help:
        "Jobs by queue and status, all tenants: waiting (on dependencies), queued, running, retrying, and dead (in the dead-letter queue); " +
        "exact up to 1,000 per queue and status, the planner's estimate beyond",
      labelNames: ["queue", "status"],
      registers,
      // Read at scrape time, so the number is current and costs nothing between scrapes.
      async collect() {
        const rows = await readDepth();
        this.reset();
        for (const row of rows ?? []) this.set({ queue: row.queue, status: row.status }, row.count);
      },
    });
    this.queueDepthUp = new Gauge({
      name: "conveyor_queue_depth_up",
      help: "1 when this scrape could read queue depth from the database, 0 when it could not",
      registers,
      async collect() {
        this.set((await readDepth()) === null ? 0 : 1);
      },
    });
    this.waitsOpen = new Gauge({
      name: "conveyor_waits_open",
      help: "Durable jobs waiting for an event (waitForEvent), all tenants, counted up to 100,000",
      registers,
      async collect() {
        this.reset();
        try {
          this.set(await overview.openWaits());
        } catch (error) {
          log.warn({ err: error }, "open waits unavailable for /metrics");
        }
      },
    });
    this.flowCallbacks = new Gauge({
      name: "conveyor_flow_callbacks",
      help: "Batch callbacks, all tenants: waiting (a member has not ended), released (queued, running or ran), skipped (ended without running)",
      labelNames: ["state"],
      registers,
      async collect() {
        this.reset();
        try {
          const counts = await overview.flowCallbackStates();
          for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
        } catch (error) {
          // As for the depth: an outage leaves the gauge empty, never fails the scrape (conveyor_queue_depth_up says it).
          log.warn({ err: error }, "batch callback states unavailable for /metrics");
        }
      },
    });
    // The three key gauges share one read per scrape, as the depth gauges do.
    let pendingKeys: Promise<KeyHeldBack[] | null> | undefined;
    const readKeys = () =>
      (pendingKeys ??= overview
        .keysHeldBack()
        .catch((error: unknown) => {
          log.warn({ err: error }, "keys held back unavailable for /metrics");
          return null;
        })
        .finally(() => {
          pendingKeys = undefined;
        }));
    const perQueue = (rows: readonly KeyHeldBack[]) => {
      const totals = new Map<string, { keys: number; jobs: number }>();
      for (const row of rows) {
        const total = totals.get(row.queue) ?? { keys: 0, jobs: 0 };
        total.keys += 1;
        total.jobs += row.heldJobs;
        totals.set(row.queue, total);
      }
      return totals;
    };
    this.keyHeldJobs = new Gauge({
      name: "conveyor_key_limit_held_jobs",
      help: "Ready jobs held back by their key's limit (concurrency or rate), by queue",
      labelNames: ["queue"],
      registers,
      async collect() {
        const rows = await readKeys();
        this.reset();
        for (const [queue, total] of perQueue(rows ?? [])) this.set({ queue }, total.jobs);
      },
    });
    this.keysAtLimit = new Gauge({
      name: "conveyor_keys_at_limit",
      help: "Keys at their concurrency limit or with a full rate window, by queue",
      labelNames: ["queue"],
      registers,
      async collect() {
        const rows = await readKeys();
        this.reset();
        for (const [queue, total] of perQueue(rows ?? [])) this.set({ queue }, total.keys);
      },
    });
    this.keyAtLimitHeldJobs = new Gauge({
      name: "conveyor_key_at_limit_held_jobs",
      help: `Ready jobs held back, for the ${KEY_METRICS_TOP} keys of each queue holding back the most (a bounded label set)`,
      labelNames: ["queue", "key"],
      registers,
      async collect() {
        const rows = await readKeys();
        this.reset();
        const shown = new Map<string, number>();
        // Rows come ordered by queue, then held jobs descending.
        for (const row of rows ?? []) {
          const count = shown.get(row.queue) ?? 0;
          if (count >= KEY_METRICS_TOP) continue;
          shown.set(row.queue, count + 1);
          this.set({ queue: row.queue, key: row.key }, row.heldJobs);
        }
      },
    });
    collectDefaultMetrics({ register: registry, prefix: "conveyor_api_" });
  }

  /** Count every answered request; unmatched URLs share one label value so clients cannot grow the label set. */
  install(app: FastifyInstance): void {
    app.addHook("onResponse", async (request, reply) => {
      const route = request.routeOptions.url ?? "unmatched";
      this.requests.inc({ method: request.method, route, status: String(reply.statusCode) });
      this.duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    });
  }
}
