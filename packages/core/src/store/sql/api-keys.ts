// API keys for the HTTP API. Only a SHA-256 hash of each key is stored; the
// key itself is shown once, when it is created. `key_prefix` (the first
// characters of the key) lets people tell their keys apart in listings.

export const API_KEY_COLUMNS = "id, name, tenant, is_admin, key_prefix, created_at, last_used_at, revoked_at";

/** $1 id, $2 name|null, $3 tenant, $4 is_admin, $5 key_hash bytea, $6 key_prefix */
export const apiKeyInsert = `
INSERT INTO {{schema}}.api_keys (id, name, tenant, is_admin, key_hash, key_prefix)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING ${API_KEY_COLUMNS}`;

/**
 * Find the live key with this hash. `last_used_at` is refreshed at most once a
 * minute per key, so authenticating is a read on almost every request rather
 * than a row write (and a dead tuple) per request.
 * $1 key_hash bytea
 */
export const apiKeyAuthenticate = `
WITH found AS (
  SELECT ${API_KEY_COLUMNS} FROM {{schema}}.api_keys WHERE key_hash = $1 AND revoked_at IS NULL
), touched AS (
  UPDATE {{schema}}.api_keys SET last_used_at = now()
  WHERE key_hash = $1 AND revoked_at IS NULL AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
)
SELECT ${API_KEY_COLUMNS} FROM found`;

/** Every key, revoked ones included, oldest first. No parameters. */
export const apiKeyList = `
SELECT ${API_KEY_COLUMNS} FROM {{schema}}.api_keys ORDER BY created_at, id`;

/** Revoke a key; revoking twice keeps the first time. Returns nothing when there is no such key. $1 id */
export const apiKeyRevoke = `
UPDATE {{schema}}.api_keys SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1
RETURNING ${API_KEY_COLUMNS}`;
