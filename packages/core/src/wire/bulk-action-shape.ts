import { z } from "zod";
import { BULK_ACTION_STATUSES, BULK_ACTIONS, type BulkAction } from "../core/bulk-actions.js";
import { MAX_BULK_ACTION_REQUESTED_BY_LENGTH } from "../core/defaults.js";
import { jobFilterBody } from "./job-filter.js";

// The zod schema of a bulk action as JSON (the HTTP API's response schema),
// and its JSON type; the mapping is in bulk-action-json.ts, which loads
// without zod for the CLI.

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
