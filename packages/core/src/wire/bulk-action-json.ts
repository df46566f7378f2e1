import { z } from "zod";
import { BULK_ACTION_STATUSES, BULK_ACTIONS, type BulkAction } from "../core/bulk-actions.js";
import { MAX_BULK_ACTION_REQUESTED_BY_LENGTH } from "../core/defaults.js";
import { jobFilterBody } from "./job-filter.js";
import { isoOrNull } from "./serialize.js";

// A bulk action as JSON, defined once: the zod schema (the HTTP API's
// response schema) and the mapping from the library's type, which `conveyor
// bulk … --json` prints too, so both say the same. The walk's internals
// (cursor, owner, lease) stay out.

const isoTime = z.iso.datetime({ offset: true });

/** A bulk action operation as JSON. */
export const bulkActionShape = z.object({
  id: z.uuid(),
  tenant: z.string().nullable().describe("the tenant whose jobs it acts on; null: every tenant"),
  action: z.enum(BULK_ACTIONS),
  filter: jobFilterBody.describe("the filter as given"),
  priority: z.number().int().nullable().describe("set_priority's priority; null otherwise"),
  queue: z.string().nullable().describe("move's queue; null otherwise"),
  status: z.enum(BULK_ACTION_STATUSES).describe("running until its walk ends; then succeeded, cancelled or failed"),
  requestedBy: z
    .string()
    .max(MAX_BULK_ACTION_REQUESTED_BY_LENGTH)
    .nullable()
    .describe("who asked: the API key's id, cli:<user>@<host>, or what a library caller gave; null when unknown"),
  total: z.number().int().nullable().describe("jobs the filter covered when it started (a planner's estimate on large tables); null when unknown"),
  touched: z.number().int().describe("jobs changed (or deleted) so far"),
  createdAt: isoTime.nullable(),
  updatedAt: isoTime.nullable().describe("changes with each batch"),
  finishedAt: isoTime.nullable().describe("null while running"),
  cancelRequested: z.boolean().describe("set by a cancel; the walk stops before its next batch"),
  error: z.string().nullable().describe("why it failed; null unless failed"),
});

/** A bulk action operation as JSON. */
export type BulkActionJson = Omit<z.output<typeof bulkActionShape>, "filter"> & { filter: BulkAction["filter"] };

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
