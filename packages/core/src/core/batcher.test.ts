import { describe, expect, it } from "vitest";
import { Batcher, pause } from "./batcher.js";

/** A flush that records its batches and stays in flight until released. */
function recorder() {
  const batches: number[][] = [];
  const releases: Array<() => void> = [];
  const flush = (items: number[]) => {
    batches.push(items);
    return new Promise<void>((resolve) => releases.push(resolve));
  };
  return { batches, releases, flush };
}

describe("Batcher", () => {
  it("flushes the first item at once, and gathers what arrives meanwhile into the next flush", async () => {
    const r = recorder();
    const batcher = new Batcher(r.flush);
    batcher.add(1);
    expect(r.batches).toEqual([[1]]);
    batcher.add(2);
    batcher.add(3);
    expect(r.batches).toEqual([[1]]); // one flush in flight at a time
    r.releases[0]!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(r.batches).toEqual([[1], [2, 3]]);
    r.releases[1]!();
    await batcher.drain();
  });

  it("waits for its delay before a flush, and drain() cuts the delay short", async () => {
    const batches: number[][] = [];
    const batcher = new Batcher<number>(
      async (items) => {
        batches.push(items);
      },
      (hurry) => pause(60_000, hurry),
    );
    batcher.add(1);
    batcher.add(2);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(batches).toEqual([]);
    await batcher.drain();
    expect(batches).toEqual([[1, 2]]);
  });

  it("gives back the items still waiting, which then never flush", async () => {
    const r = recorder();
    const batcher = new Batcher(r.flush);
    batcher.add(1);
    batcher.add(2);
    expect(batcher.discard()).toEqual([2]);
    r.releases[0]!();
    await batcher.drain();
    expect(r.batches).toEqual([[1]]);
  });

  it("keeps flushing after a flush that throws", async () => {
    const seen: number[][] = [];
    const batcher = new Batcher<number>(async (items) => {
      seen.push(items);
      if (items.includes(1)) throw new Error("broken");
    });
    batcher.add(1);
    batcher.add(2);
    await batcher.drain();
    expect(seen).toEqual([[1], [2]]);
  });
});
