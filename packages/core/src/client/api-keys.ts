import { createHash, randomBytes } from "node:crypto";
import { DEFAULT_TENANT, MAX_NAME_LENGTH } from "../core/defaults.js";
import { NotFoundError, ValidationError } from "../core/errors.js";
import { isUuid, uuidv7 } from "../core/ids.js";
import type { ApiKeyRecord, ApiKeyStore } from "../store/api-key-store.js";
import { checkKnownFields, checkTenant } from "../core/validate.js";

export type { ApiKeyRecord } from "../store/api-key-store.js";

/** Every key starts with this, so a leaked one is easy to recognise (and to scan for). */
export const API_KEY_PREFIX = "cvk_";
// 32 random bytes: 256 bits, far past guessing, which is why one unsalted
// SHA-256 is enough to store them (salts and slow hashes are for low-entropy passwords).
const KEY_BYTES = 32;
// Characters of the key kept in clear for listings: the marker and 8 random characters.
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;
/** A key `import` accepts: the prefix, then 16 to 124 base64url characters. */
const IMPORTED_KEY = new RegExp(`^${API_KEY_PREFIX}[A-Za-z0-9_-]{16,124}$`);

/** Options of `apiKeys.create` and `apiKeys.import`. */
export interface CreateApiKeyOptions {
  /**
   * Tenant the key acts for.
   * @defaultValue `DEFAULT_TENANT` ("default")
   */
  tenant?: string;
  /**
   * Admin keys see and change every tenant. Default false: a key of its
   * tenant only.
   */
  admin?: boolean;
  /** A label for people, e.g. "billing service". Default none. */
  name?: string;
}

/**
 * API keys for the HTTP API (`conveyor.apiKeys`): create (the key is
 * returned once and never stored), import, list, revoke, authenticate.
 *
 * @example
 * const { key } = await conveyor.apiKeys.create({ tenant: "acme", name: "billing" });
 */
export class ApiKeys {
  /** @internal Made by the client, on its store's API keys. */
  constructor(private readonly store: ApiKeyStore) {}

  /** Create a key. `key` is the only copy: show it once. */
  async create(options: CreateApiKeyOptions = {}): Promise<{
    /** The secret, `cvk_…`: stored only as a hash. */
    key: string;
    /** The stored record. */
    record: ApiKeyRecord;
  }> {
    const key = API_KEY_PREFIX + randomBytes(KEY_BYTES).toString("base64url");
    return { key, record: await this.insert(key, options) };
  }

  /**
   * Store a key chosen outside (e.g. one a deployment passes in), as
   * `create` stores its own: only its hash. The key must be
   * `API_KEY_PREFIX` followed by 16 to 124 base64url characters
   * (ValidationError otherwise). Throws ConflictError when it is stored
   * already, revoked or not.
   */
  async import(key: string, options: CreateApiKeyOptions = {}): Promise<ApiKeyRecord> {
    if (typeof key !== "string" || !IMPORTED_KEY.test(key)) {
      throw new ValidationError(`key must be ${API_KEY_PREFIX} followed by 16-124 letters, digits, _ or -`, [{ path: "key", message: "invalid key" }]);
    }
    return this.insert(key, options);
  }

  private async insert(key: string, options: CreateApiKeyOptions): Promise<ApiKeyRecord> {
    checkKnownFields(options, { tenant: true, admin: true, name: true }, "an API key option");
    const tenant = options.tenant ?? DEFAULT_TENANT;
    checkTenant(tenant);
    const name = options.name ?? null;
    if (name !== null && (name.length === 0 || name.length > MAX_NAME_LENGTH || /[\u0000-\u001f]/.test(name))) {
      throw new ValidationError(`name must be 1-${MAX_NAME_LENGTH} printable characters`, [{ path: "name", message: "invalid name" }]);
    }
    return this.store.apiKeyInsert({
      id: uuidv7(),
      name,
      tenant,
      admin: options.admin ?? false,
      hash: hashApiKey(key),
      prefix: key.slice(0, SHOWN_PREFIX_LENGTH),
    });
  }

  /** Every key, revoked ones included, oldest first. */
  list(): Promise<ApiKeyRecord[]> {
    return this.store.apiKeyList();
  }

  /** Revoke a key: it stops working on the next request. Throws NotFoundError for an unknown id. */
  async revoke(id: string): Promise<ApiKeyRecord> {
    if (!isUuid(id)) throw new ValidationError(`id must be a UUID, got ${JSON.stringify(id)}`, [{ path: "id", message: "must be a UUID" }]);
    const record = await this.store.apiKeyRevoke(id);
    if (!record) throw new NotFoundError(`API key ${id} not found`);
    return record;
  }

  /** The live key record for a presented key, or null (unknown, malformed or revoked). */
  async authenticate(key: string): Promise<ApiKeyRecord | null> {
    // Anything that cannot be one of our keys is refused without a query.
    if (!key.startsWith(API_KEY_PREFIX) || key.length > 128) return null;
    return this.store.apiKeyAuthenticate(hashApiKey(key));
  }
}

/** SHA-256 of the key's UTF-8 bytes: what the `api_keys` table stores. */
export function hashApiKey(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}
