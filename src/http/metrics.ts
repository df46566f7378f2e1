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
  readonly registry: Registry;
  readonly requests: Counter<"method" | "route" | "status">;
  readonly duration: Histogram<"method" | "route">;
  readonly enqueued: Counter<"kind" | "queue">;
  readonly queueDepth: Gauge<"queue" | "status">;
  readonly scrapeErrors: Counter;

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
    this.scrapeErrors = new Counter({
      name: "conveyor_api_queue_depth_errors_total",
      help: "Scrapes whose queue-depth query failed (the gauge is then empty)",
      registers,
    });
    const scrapeErrors = this.scrapeErrors;
    this.queueDepth = new Gauge({
      name: "conveyor_queue_depth",
      help: "Jobs by queue and status, all tenants: queued, running, retrying, and dead (in the dead-letter queue)",
      labelNames: ["queue", "status"],
      registers,
      // Read at scrape time, so the number is current and costs nothing between scrapes.
      async collect() {
        this.reset();
        try {
          for (const row of await overview.queueDepth()) this.set({ queue: row.queue, status: row.status }, row.count);
        } catch (error) {
          // A database outage must not fail the whole scrape: the HTTP metrics still matter.
          scrapeErrors.inc();
          log.warn({ err: error }, "queue depth unavailable for /metrics");
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
