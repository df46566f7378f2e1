import type { ConveyorClient } from "conveyor-jobs/internal/client/conveyor-client.js";
import type { QueueOverview } from "conveyor-jobs/internal/client/queue-overview.js";
import type { ApiMetrics } from "./metrics.js";
import type { KindDocs } from "./openapi.js";

/** What route modules need: the client, read-only overviews, metrics, and the kinds for documentation. */
export interface RouteContext {
  conveyor: ConveyorClient;
  overview: QueueOverview;
  metrics: ApiMetrics;
  kinds: KindDocs;
}
