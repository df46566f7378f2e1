import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT } from "../core/defaults.js";
import { ValidationError } from "../core/errors.js";
import type { Page } from "../core/model.js";
import { encodeCursor } from "./cursor.js";

/** A list call's page size: `DEFAULT_LIST_LIMIT` when omitted, refused outside 1..`MAX_LIST_LIMIT`. */
export function checkLimit(limit: number | undefined): number {
  const value = limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isInteger(value) || value < 1 || value > MAX_LIST_LIMIT) {
    throw new ValidationError(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${String(limit)}`, [{ path: "limit", message: "out of range" }]);
  }
  return value;
}

/** A page of `limit` rows out of `limit + 1` read: the extra row only says there is a next page. */
export function pageOf<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? encodeCursor(items.at(-1)!.id) : null };
}
