/** A figure measured over several runs: the median, the range, and each run in order. */
export interface Figure {
  median: number;
  min: number;
  max: number;
  runs: number[];
  /** Set when a run hit its time cap (the rate is then over the capped window) or failed. */
  note?: string;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0..100) of unsorted values. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function figureOf(runs: readonly number[], note?: string): Figure | null {
  const finite = runs.filter((value) => Number.isFinite(value));
  if (finite.length === 0) return null;
  return {
    median: median(finite),
    min: Math.min(...finite),
    max: Math.max(...finite),
    runs: [...runs],
    ...(note ? { note } : {}),
  };
}

/** The least-squares slope of y over x, or NaN with fewer than two distinct x. */
export function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 2) return NaN;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / n;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of points) {
    sxy += (x - meanX) * (y - meanY);
    sxx += (x - meanX) ** 2;
  }
  return sxx === 0 ? NaN : sxy / sxx;
}
