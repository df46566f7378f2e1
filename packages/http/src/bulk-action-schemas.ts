import { z } from "zod";
import { BULK_ACTIONS } from "conveyor-jobs";
import { jobFilterBody, MAX_NAME_LENGTH, MAX_PRIORITY, MIN_PRIORITY, NAME_PATTERN, requestObject } from "conveyor-jobs/server";
import { deadLetterListQuery } from "./schemas.js";

// Request schemas of the bulk action routes (the response's shape is in
// wire/bulk-action-json.ts). The client re-checks every value and stays the
// authority (client/bulk-actions.ts): an empty filter without `all`, or a
// priority or queue that does not fit the action, is refused there (422,
// naming the field).

/** `POST /v1/bulk-actions`. */
export const bulkActionBody = requestObject({
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
});

/** `GET /v1/bulk-actions`: a tenant (admin keys; a tenant key sees its own), a page size and a cursor. */
export const bulkActionListQuery = deadLetterListQuery.pick({ tenant: true, limit: true, cursor: true });
