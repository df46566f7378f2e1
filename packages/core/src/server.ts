/**
 * The `conveyor-jobs/server` entry: what conveyor-jobs-http (the API) and
 * conveyor-jobs-embedded use of the core beyond `conveyor-jobs` itself.
 * It is for those two packages and follows the core's version, with no
 * compatibility promise of its own, so it is not in the API reference.
 *
 * @module
 */

// The contract the CLI loads the API and the embedded server by (each package checks it with `satisfies`).
export type { EmbeddedPackage, HttpPackage } from "./optional-packages.js";

// API keys: the API authenticates requests by them, and conveyor-jobs-http re-exports them for applications that manage keys.
export { API_KEY_PREFIX, ApiKeys } from "./client/api-keys.js";
export type { ApiKeyRecord, CreateApiKeyOptions } from "./client/api-keys.js";

// Limits and defaults: the API's request schemas check the client's limits; its options, metrics and sweep use these defaults.
export {
  BULK_ACTION_SWEEP_INTERVAL_MS,
  DEFAULT_API_HOST,
  DEFAULT_API_PORT,
  DEFAULT_HTTP_BODY_LIMIT_BYTES,
  DEFAULT_HTTP_REQUEST_TIMEOUT_MS,
  KEY_METRICS_TOP,
  MAX_BATCH_JOBS,
  MAX_CONCURRENCY_LIMIT,
  MAX_HTTP_PATH_SEGMENT_LENGTH,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_LIMIT_KEY_LENGTH,
  MAX_LIST_LIMIT,
  MAX_NAME_LENGTH,
  MAX_PRIORITY,
  MAX_RATE_INTERVAL_MS,
  MAX_RATE_LIMIT_COUNT,
  MAX_RETENTION_AGE_MS,
  MAX_RETENTION_BATCH_SIZE,
  MAX_STEP_NAME_LENGTH,
  MAX_STEP_RESULT_BYTES,
  MAX_TENANT_LENGTH,
  MAX_TOP_KEYS,
  MIN_PRIORITY,
  NAME_PATTERN,
  READ_ONLY_RETRY_AFTER_S,
} from "./core/defaults.js";

// Reading requests: strict JSON bodies, list cursors, trace headers, and the schemas of a job, flow or filter in a body or query.
export { parseStrictJson, StrictJsonError } from "./wire/strict-json.js";
export { decodeCursor } from "./client/cursor.js";
export { traceContextFromHeaders } from "./core/trace-context.js";
export { checkKnownFields } from "./core/validate.js";
export type { KnownFields } from "./core/validate.js";
export { requestObject } from "./wire/request-object.js";
export { batchJobItem, jobFields } from "./wire/job-request.js";
export type { BatchJobItem } from "./wire/job-request.js";
export { batchFlowBody, flowBody, jobDependencyFields } from "./wire/flow-request.js";
export type { BatchFlowBody, FlowBody, FlowJobItem } from "./wire/flow-request.js";
export { jobFilterBody, jobFilterQuery, toJobFilter } from "./wire/job-filter.js";

// Writing responses: the JSON the API sends and the CLI's --json prints, each as a schema (the OpenAPI document's) and a serializer.
export { deadLetterJson, executionJson, isoOrNull, jobDetailJson, jobJson, workerJson } from "./wire/serialize.js";
export { deadLetterShape, errorShape, executionShape, jobDetailShape, jobShape, optionalTime, storedTime, workerShape } from "./wire/job-shapes.js";
export { bulkActionJson } from "./wire/bulk-action-json.js";
export { bulkActionShape } from "./wire/bulk-action-shape.js";
export { flowDetailJson, flowSummaryJson } from "./wire/flow-json.js";
export { flowDetailShape, flowSummaryShape, statusCountsShape } from "./wire/flow-shapes.js";
export { jobCountJson } from "./wire/job-count-json.js";
export { jobCountShape } from "./wire/job-count-shape.js";
export { keyLimitSettingsJson, keyLoadJson, keyStatusJson } from "./wire/key-limits-json.js";
export { keyLimitSettingsShape, keyLoadShape, keyStatusShape } from "./wire/key-limits-shapes.js";
export { scheduleJson } from "./wire/schedule-json.js";
export { scheduleShape } from "./wire/schedule-shape.js";
export { sentEventJson, stepJson } from "./wire/step-json.js";
export { sentEventShape, stepShape } from "./wire/step-shapes.js";

// Errors: the API answers 503 when the database is unreachable.
export { isConnectionError } from "./store/pg-errors.js";
