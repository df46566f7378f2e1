import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { API_KEY_PREFIX } from "../client/api-keys.js";
import type { Conveyor } from "../conveyor.js";
import { ConfigError, ConveyorError } from "../core/errors.js";

/** Where `conveyor dev` keeps the admin key it created, so the dashboard sign-in survives restarts. */
export const DEV_KEY_FILE = resolve(process.cwd(), ".conveyor", "dev-admin-key");

/** A key given from outside: the prefix, then 16 to 124 base64url characters. */
const GIVEN_KEY = new RegExp(`^${API_KEY_PREFIX}[A-Za-z0-9_-]{16,124}$`);

export interface DevAdminKey {
  key: string;
  /** Where it came from, for the banner. */
  source: string;
}

/**
 * The admin key `conveyor dev` prints:
 * - `CONVEYOR_ADMIN_KEY` when set (so scripts know the key): stored (hashed)
 *   as an admin key if this database does not have it yet;
 * - else the key saved in `.conveyor/dev-admin-key` by an earlier run, if
 *   this database still accepts it as an admin key;
 * - else a new admin key, saved there (mode 0600) for the next run.
 */
export async function devAdminKey(conveyor: Conveyor, fromEnvironment: string | undefined): Promise<DevAdminKey> {
  const keys = conveyor.apiKeys;
  if (fromEnvironment) {
    if (!GIVEN_KEY.test(fromEnvironment)) {
      throw new ConfigError(`CONVEYOR_ADMIN_KEY must be ${API_KEY_PREFIX} followed by 16-124 letters, digits, _ or - (e.g. from \`conveyor keys create --admin\`)`);
    }
    const record = await keys.authenticate(fromEnvironment);
    if (record && !record.admin) throw new ConfigError(`CONVEYOR_ADMIN_KEY is a key of tenant "${record.tenant}", not an admin key`);
    if (!record) await importKey(conveyor, fromEnvironment);
    return { key: fromEnvironment, source: "from CONVEYOR_ADMIN_KEY" };
  }
  const saved = await readFile(DEV_KEY_FILE, "utf8").then(
    (text) => text.trim(),
    () => null,
  );
  if (saved && (await keys.authenticate(saved))?.admin) return { key: saved, source: "saved in .conveyor/dev-admin-key" };
  const { key } = await keys.create({ admin: true, name: "conveyor dev" });
  await mkdir(dirname(DEV_KEY_FILE), { recursive: true });
  await writeFile(DEV_KEY_FILE, `${key}\n`, { mode: 0o600 });
  await chmod(DEV_KEY_FILE, 0o600);
  return { key, source: "new; saved in .conveyor/dev-admin-key" };
}

/** Store a key chosen outside (only its hash, like any key). */
async function importKey(conveyor: Conveyor, key: string): Promise<void> {
  try {
    await conveyor.apiKeys.import(key, { admin: true, name: "conveyor dev (CONVEYOR_ADMIN_KEY)" });
  } catch (error) {
    // The hash is unique: a key that authenticates as nobody yet exists was revoked.
    if (error instanceof ConveyorError && error.code === "CONFLICT") {
      throw new ConfigError("CONVEYOR_ADMIN_KEY was revoked in this database: choose another key");
    }
    throw error;
  }
}
