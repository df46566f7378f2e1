import { open, readFile, stat, unlink } from "node:fs/promises";
import { isProcessAlive } from "./postmaster.js";

/**
 * A lock file written between `open(…, "wx")` and the pid inside it is empty
 * for a moment; only an empty file older than this is taken as abandoned.
 */
const EMPTY_LOCK_GRACE_MS = 10_000;

/** Releases a lock taken by `tryStartLock`. Safe to call twice. */
export type ReleaseLock = () => Promise<void>;

/**
 * Try once to take the exclusive lock that guards starting the server: a file
 * created with O_EXCL holding our pid. Returns its release function, or null
 * while another live process holds it. A lock left by a dead process is
 * removed and taken.
 */
export async function tryStartLock(path: string): Promise<ReleaseLock | null> {
  for (let round = 0; round < 2; round++) {
    try {
      const handle = await open(path, "wx", 0o644);
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        await unlink(path).catch(() => {});
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    if (!(await breakIfStale(path))) return null;
  }
  return null;
}

/** True when the lock at `path` was abandoned and has been removed. */
async function breakIfStale(path: string): Promise<boolean> {
  const seen = await readLock(path);
  if (seen === undefined) return true; // released meanwhile
  if (!isStale(seen)) return false;
  // Two processes may find the same stale lock. Without a guard, the slower one
  // could delete the lock the faster one has just created, so breaking happens
  // under a second lock, and the holder re-reads before deleting.
  const breakPath = `${path}.break`;
  let guard;
  try {
    guard = await open(breakPath, "wx");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    await removeIfOlderThan(breakPath, EMPTY_LOCK_GRACE_MS); // its owner died mid-break
    return false;
  }
  try {
    const current = await readLock(path);
    if (current === undefined) return true;
    if (current.text !== seen.text || !isStale(current)) return false;
    await unlink(path).catch(() => {});
    return true;
  } finally {
    await guard.close();
    await unlink(breakPath).catch(() => {});
  }
}

interface LockContents {
  text: string;
  ageMs: number;
}

async function readLock(path: string): Promise<LockContents | undefined> {
  try {
    const [text, info] = await Promise.all([readFile(path, "utf8"), stat(path)]);
    return { text, ageMs: Date.now() - info.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

function isStale(lock: LockContents): boolean {
  const pid = Number.parseInt(lock.text, 10);
  if (!(pid > 0)) return lock.ageMs > EMPTY_LOCK_GRACE_MS;
  return !isProcessAlive(pid);
}

async function removeIfOlderThan(path: string, ageMs: number): Promise<void> {
  try {
    if (Date.now() - (await stat(path)).mtimeMs > ageMs) await unlink(path);
  } catch {
    // gone already
  }
}
