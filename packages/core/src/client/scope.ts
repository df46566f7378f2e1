import { ValidationError } from "../core/errors.js";
import { isUuid } from "../core/ids.js";
import { checkKnownFields } from "../core/validate.js";

/** Restrict reads and writes to one tenant; omit (or null) for all tenants (admin). */
export interface TenantScope {
  /** The tenant; omit or null for all tenants. */
  tenant?: string | null;
}

/** Refuse an id that is not a UUID before any query (a ValidationError naming `id`). */
export function checkId(id: string): void {
  if (typeof id !== "string" || !isUuid(id)) throw new ValidationError(`id must be a UUID, got ${JSON.stringify(id)}`, [{ path: "id", message: "must be a UUID" }]);
}

/** The tenant a scope names (null: every tenant), refusing a field a scope does not have. */
export function scopeTenant(scope: TenantScope): string | null {
  checkKnownFields(scope, { tenant: true }, "a field of a tenant scope");
  return scope.tenant ?? null;
}
