import { ValidationError } from "../core/errors.js";
import { isUuid } from "../core/ids.js";

/** Restrict reads and writes to one tenant; omit (or null) for all tenants (admin). */
export interface TenantScope {
  /** The tenant; omit or null for all tenants. */
  tenant?: string | null;
}

/** Refuse an id that is not a UUID before any query (a ValidationError naming `id`). */
export function checkId(id: string): void {
  if (typeof id !== "string" || !isUuid(id)) throw new ValidationError(`id must be a UUID, got ${JSON.stringify(id)}`, [{ path: "id", message: "must be a UUID" }]);
}
