import type { Queryable } from "./db.js";
import { runQuery } from "./run-query.js";
import type { Queries } from "./queries.js";

/** An API key as stored: everything but the key and its hash. */
export interface ApiKeyRecord {
  /** The key's id. */
  id: string;
  /** A name given at creation; null when none. */
  name: string | null;
  /** The tenant its requests act in. */
  tenant: string;
  /** Admin keys see and change every tenant's jobs. */
  admin: boolean;
  /** The first characters of the key, to tell keys apart in listings. */
  prefix: string;
  /** When it was created. */
  createdAt: Date;
  /** Refreshed at most once a minute. */
  lastUsedAt: Date | null;
  /** When it was revoked; null while valid. */
  revokedAt: Date | null;
}

/** One key to insert; `hash` is the SHA-256 of the key. */
export interface ApiKeyInsertRow {
  id: string;
  name: string | null;
  tenant: string;
  admin: boolean;
  hash: Buffer;
  prefix: string;
}

/** The `api_keys` table: statements named entity first, like `JobStore`. */
export class ApiKeyStore {
  private readonly pool: Queryable;
  private readonly q: Queries;

  constructor(pool: Queryable, queries: Queries) {
    this.pool = pool;
    this.q = queries;
  }

  async apiKeyInsert(row: ApiKeyInsertRow): Promise<ApiKeyRecord> {
    const { rows } = await runQuery(this.pool, this.q.apiKeyInsert, [row.id, row.name, row.tenant, row.admin, row.hash, row.prefix]);
    return rowToApiKey(rows[0]);
  }

  /** The live (not revoked) key with this hash, or null. */
  async apiKeyAuthenticate(hash: Buffer): Promise<ApiKeyRecord | null> {
    const { rows } = await runQuery(this.pool, this.q.apiKeyAuthenticate, [hash]);
    return rows[0] ? rowToApiKey(rows[0]) : null;
  }

  async apiKeyList(): Promise<ApiKeyRecord[]> {
    const { rows } = await runQuery(this.pool, this.q.apiKeyList, []);
    return rows.map(rowToApiKey);
  }

  /** Revoke; null when there is no such key. Revoking twice keeps the first time. */
  async apiKeyRevoke(id: string): Promise<ApiKeyRecord | null> {
    const { rows } = await runQuery(this.pool, this.q.apiKeyRevoke, [id]);
    return rows[0] ? rowToApiKey(rows[0]) : null;
  }
}

function rowToApiKey(row: Record<string, any>): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    tenant: row.tenant,
    admin: row.is_admin,
    prefix: row.key_prefix,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  };
}
