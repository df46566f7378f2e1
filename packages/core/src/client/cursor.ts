import { ValidationError } from "../core/errors.js";
import { isUuid } from "../core/ids.js";

/** Opaque page cursors: the last id of a page, base64url-encoded so clients do not build them. */
export function encodeCursor(lastId: string): string {
  return Buffer.from(lastId, "utf8").toString("base64url");
}

/** The last id a cursor names, or null for no cursor; a ValidationError for a cursor this API did not return. */
export function decodeCursor(cursor: string | null | undefined): string | null {
  if (cursor === undefined || cursor === null || cursor === "") return null;
  const id = Buffer.from(cursor, "base64url").toString("utf8");
  if (!isUuid(id)) throw new ValidationError("cursor is not one this API returned", [{ path: "cursor", message: "invalid cursor" }]);
  return id;
}
