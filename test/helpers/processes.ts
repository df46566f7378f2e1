import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

/** True when no process has this pid, or only its zombie remains (nobody reaped it yet). */
export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state …"; Z is a zombie.
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true; // vanished between the two checks
  }
}

/** Wait until `pid` is gone; false when it still runs after `timeoutMs`. */
export async function waitForProcessGone(pid: number, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (processGone(pid)) return true;
    await sleep(50);
  }
  return processGone(pid);
}
