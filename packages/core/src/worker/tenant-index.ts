import type { Logger } from "pino";
import type { Store } from "../store/store.js";

/**
 * Fair claims walk the tenants through an index built when first needed
 * (sql/tenant-index.ts in the store). Without it they still claim fairly, only by reading
 * every ready job; so a failure to build it is logged, not fatal.
 */
export async function ensureTenantIndex(store: Store, log: Logger): Promise<void> {
  try {
    if (await store.tenantIndexEnsure()) log.info("built the tenant index for fair claims");
  } catch (error) {
    log.warn({ err: (error as Error).message }, "could not build the tenant index; fair claims read every ready job until a worker builds it");
  }
}
