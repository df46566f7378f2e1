/** The ranges [start, end) that cover 0 … count-1 in pieces of at most `size`, in order. */
export function* chunkRanges(count: number, size: number): Generator<[number, number]> {
  for (let start = 0; start < count; start += size) yield [start, Math.min(start + size, count)];
}
