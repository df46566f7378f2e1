import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { QueueOverview } from "../client/queue-overview.js";

/**
 * The API's Prometheus metrics, in a registry of its own (so an API and a
 * worker in one process never collide): HTTP requests and latency by route
 * template, jobs enqueued, and queue depth read from the database at scrape
 * time.
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
  /** `conveyor_queue_depth{queue,status}`: jobs per queue and state, read at scrape time. */
  readonly queueDepth: Gauge<"queue" | "status">;
  /** `conveyor_queue_depth_up`: 1 when the last depth read succeeded, else 0. */
  readonly queueDepthUp: Gauge;

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
    // Both gauges below are filled by one query per scrape: prom-client
    // collects metrics concurrently, so they share the read in flight.
    let pending: Promise<Array<{ queue: string; status: string; count: number }> | null> | undefined;
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
      help: "Jobs by queue and status, all tenants: queued, running, retrying, and dead (in the dead-letter queue)",
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
