import { setTimeout as sleep } from "node:timers/promises";

/** How long `waitFor` polls before it gives up, when no timeout is given: 20 s. */
export const WAIT_FOR_TIMEOUT_MS = 20_000;
/** The pause between two checks of `waitFor`, when no interval is given: 25 ms. */
export const WAIT_FOR_INTERVAL_MS = 25;

/**
 * Thrown by a `waitFor` check to stop waiting at once, when what it waits
 * for can no longer happen (the process it watches has exited).
 */
export class StopWaiting extends Error {
  override name = "StopWaiting";
}

/**
 * Poll `check` until it returns a truthy value, and return that value. A
 * check that throws (a server not listening yet, a database restarting) is
 * tried again, unless it throws `StopWaiting`, which `waitFor` rethrows at
 * once. Past `timeoutMs` it throws an error naming `what` and the last
 * value or error the check gave, so a timeout says what it saw.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs = WAIT_FOR_TIMEOUT_MS,
  intervalMs = WAIT_FOR_INTERVAL_MS,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
      last = value;
    } catch (error) {
      if (error instanceof StopWaiting) throw error;
      last = error;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${describe(last)})`, { cause: last });
    }
    await sleep(intervalMs);
  }
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
