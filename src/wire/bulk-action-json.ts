import type { BulkAction, BulkActionFilter } from "../core/bulk-actions.js";
import { isoOrNull } from "./serialize.js";

// A bulk action as JSON: the body of the HTTP API's bulk action routes
// (http/bulk-action-schemas.ts states its schema) and what `conveyor bulk
// … --json` prints, so both say the same. The walk's internals (cursor,
// owner, lease) stay out.

/** A bulk action operation as JSON. */
export interface BulkActionJson {
  id: string;
  tenant: string | null;
  action: BulkAction["action"];
  filter: BulkActionFilter;
  priority: number | null;
  queue: string | null;
  status: BulkAction["status"];
  requestedBy: string | null;
  total: number | null;
  touched: number;
  createdAt: string | null;
  updatedAt: string | null;
  finishedAt: string | null;
  cancelRequested: boolean;
  error: string | null;
}

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
