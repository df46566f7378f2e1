/**
 * Wall-clock milliseconds with sub-millisecond resolution. Both the bench
 * process and its worker children read this clock, so times taken in one can
 * be compared with times taken in the other (after `calibrate`, which
 * measures the small offset between the two processes' time origins).
 */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolve with `promise`, or reject with `message` after `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${message} (after ${Math.round(ms)} ms)`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
