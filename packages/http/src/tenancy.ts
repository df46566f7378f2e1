import type { FastifyRequest } from "fastify";
import { principalOf } from "./auth.js";
import { HttpProblem } from "./problem.js";

/**
 * Tenant rules, in one place:
 * - a tenant key acts only for its own tenant; naming another tenant in a
 *   body or filter is refused with 403 (naming its own is allowed);
 * - an admin key reads every tenant unless it names one, and writes to the
 *   tenant it names, else to its own key's tenant ("default" unless the key
 *   was created for another).
 */

/** The tenant a read is limited to, or null for all tenants (admin without a filter). */
export function readScope(request: FastifyRequest, requested: string | undefined): { tenant: string | null } {
  const principal = principalOf(request);
  if (principal.admin) return { tenant: requested ?? null };
  refuseOtherTenant(principal.tenant, requested);
  return { tenant: principal.tenant };
}

/** The tenant a new job belongs to. */
export function writeTenant(request: FastifyRequest, requested: string | undefined): string {
  const principal = principalOf(request);
  if (principal.admin) return requested ?? principal.tenant;
  refuseOtherTenant(principal.tenant, requested);
  return principal.tenant;
}

/** The scope of an action on one existing job or dead letter: the key's tenant, or every tenant for admins. */
export function actionScope(request: FastifyRequest): { tenant: string | null } {
  const principal = principalOf(request);
  return { tenant: principal.admin ? null : principal.tenant };
}

function refuseOtherTenant(own: string, requested: string | undefined): void {
  if (requested !== undefined && requested !== own) {
    throw new HttpProblem(403, "FORBIDDEN", `this API key belongs to tenant ${JSON.stringify(own)} and cannot act for tenant ${JSON.stringify(requested)}`);
  }
}
