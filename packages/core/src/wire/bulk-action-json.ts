import type { BulkAction } from "../core/bulk-actions.js";
import type { BulkActionJson } from "./bulk-action-shape.js";
import { isoOrNull } from "./serialize.js";

// A bulk action as JSON, defined once: the zod schema (bulk-action-shape.ts,
// the HTTP API's response schema) and the mapping from the library's type
// here, which `conveyor bulk … --json` prints too, so both say the same.
// The walk's internals (cursor, owner, lease) stay out.

export type { BulkActionJson } from "./bulk-action-shape.js";

/** A bulk action operation as JSON. */
export function bulkActionJson(operation: BulkAction): BulkActionJson {
  return {
    id: operation.id,
    tenant: operation.tenant,
    action: operation.action,
    filter: operation.filter,
    priority: operation.priority,
    queue: operation.queue,
    status: operation.status,
    requestedBy: operation.requestedBy,
    total: operation.total,
    touched: operation.touched,
    createdAt: isoOrNull(operation.createdAt),
    updatedAt: isoOrNull(operation.updatedAt),
    finishedAt: isoOrNull(operation.finishedAt),
    cancelRequested: operation.cancelRequested,
    error: operation.error,
  };
}
