import { randomBytes } from "node:crypto";
import { readFile, rename, writeFile } from "node:fs/promises";

/** How to log in to the embedded server; stored beside its data directory. */
export interface Credentials {
  user: string;
  password: string;
  database: string;
}

/** The superuser initdb creates, and the database Conveyor uses. */
const USER = "postgres";
const DATABASE = "conveyor";

/** Fresh credentials with a random password (192 bits, URL-safe). */
export function generateCredentials(): Credentials {
  return { user: USER, password: randomBytes(24).toString("base64url"), database: DATABASE };
}

/** The stored credentials, or null when the file does not exist. */
export async function readCredentials(path: string): Promise<Credentials | null> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  const parsed = JSON.parse(text) as Partial<Credentials>;
  if (typeof parsed.user !== "string" || typeof parsed.password !== "string" || typeof parsed.database !== "string") {
    throw new Error(`${path} is not a credentials file (expected user, password and database)`);
  }
  return { user: parsed.user, password: parsed.password, database: parsed.database };
}

/** Write the file readable by its owner only, atomically (a reader never sees half of it). */
export async function writeCredentials(path: string, credentials: Credentials): Promise<void> {
  const staging = `${path}.${process.pid}.tmp`;
  await writeFile(staging, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  await rename(staging, path);
}

/** `postgres://user:password@127.0.0.1:port/database`. */
export function connectionStringFor(credentials: Credentials, port: number, database = credentials.database): string {
  const user = encodeURIComponent(credentials.user);
  const password = encodeURIComponent(credentials.password);
  return `postgres://${user}:${password}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}
