import type { ConveyorClient, QueueOverview } from "conveyor-jobs";
import type { ApiMetrics } from "./metrics.js";
import type { KindDocs } from "./openapi.js";

/** What route modules need: the client, read-only overviews, metrics, and the kinds for documentation. */
export interface RouteContext {
  conveyor: ConveyorClient;
  overview: QueueOverview;
  metrics: ApiMetrics;
  kinds: KindDocs;
}
