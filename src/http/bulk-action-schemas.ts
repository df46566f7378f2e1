import { z } from "zod";
import { MAX_BULK_ACTION_REQUESTED_BY_LENGTH, MAX_NAME_LENGTH, MAX_PRIORITY, MIN_PRIORITY, NAME_PATTERN } from "../core/defaults.js";
import { BULK_ACTION_STATUSES, BULK_ACTIONS } from "../core/bulk-actions.js";
import { jobFilterBody } from "../wire/job-filter.js";
import { deadLetterListQuery } from "./schemas.js";
import { toJsonSchema } from "./validation.js";

// Request and response schemas of the bulk action routes. The client
// re-checks every value and stays the authority (client/bulk-actions.ts):
// an empty filter without `all`, or a priority or queue that does not fit
// the action, is refused there (422, naming the field).

/** `POST /v1/bulk-actions`. */
export const bulkActionBody = z
  .object({
    action: z
      .enum(BULK_ACTIONS)
      .describe(
        "retry: dead jobs requeued with fresh attempts, retrying jobs run now; cancel: waiting, queued and retrying jobs " +
          "cancelled, running ones asked to stop; purge: succeeded, cancelled and dead jobs deleted; set_priority, move: " +
          "waiting, queued and retrying jobs get the priority or queue",
      ),
    filter: jobFilterBody.describe("which jobs: every field given must match; {} covers every job and needs all: true"),
    priority: z.number().int().min(MIN_PRIORITY).max(MAX_PRIORITY).optional().describe("set_priority only, and required there"),
    queue: z
      .string()
      .min(1)
      .max(MAX_NAME_LENGTH)
      .regex(NAME_PATTERN, "must be letters, digits and _ . : - /")
      .optional()
      .describe("move only, and required there: the queue the jobs move to"),
    all: z.boolean().optional().describe("true to act on every job of the scope when the filter names nothing; default false"),
  })
  .strict();

/** `GET /v1/bulk-actions`: a tenant (admin keys; a tenant key sees its own), a page size and a cursor. */
export const bulkActionListQuery = deadLetterListQuery.pick({ tenant: true, limit: true, cursor: true });

const isoTime = z.iso.datetime({ offset: true });

const bulkAction = z.object({
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

export const bulkActionResponse = toJsonSchema(bulkAction);
export const bulkActionPageResponse = toJsonSchema(z.object({ items: z.array(bulkAction), nextCursor: z.string().nullable() }));

export { bulkActionJson } from "../wire/bulk-action-json.js";
