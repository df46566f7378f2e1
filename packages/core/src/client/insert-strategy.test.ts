import { describe, expect, it } from "vitest";
import { COPY_MIN_ROWS, ENQUEUE_CHUNK_ROWS } from "../core/defaults.js";
import { chooseInsertStrategy } from "./insert-strategy.js";

const choose = (rows: number, inCallerTransaction: boolean, keyed: boolean) => chooseInsertStrategy({ rows, inCallerTransaction, keyed });

describe("chooseInsertStrategy", () => {
  it("writes one row in one statement, keyed or not, in a transaction or not", () => {
    for (const tx of [false, true]) for (const keyed of [false, true]) expect(choose(1, tx, keyed)).toBe("statement");
  });

  it("uses COPY only for large calls without keys outside the caller's transaction", () => {
    expect(choose(COPY_MIN_ROWS - 1, false, false)).toBe("statement");
    expect(choose(COPY_MIN_ROWS, false, false)).toBe("copy");
    expect(choose(100_000, false, false)).toBe("copy");
    expect(choose(COPY_MIN_ROWS, true, false)).toBe("statement");
    expect(choose(COPY_MIN_ROWS, false, true)).toBe("keyed");
  });

  it("chunks calls over ENQUEUE_CHUNK_ROWS that COPY cannot take", () => {
    expect(choose(ENQUEUE_CHUNK_ROWS, true, false)).toBe("statement");
    expect(choose(ENQUEUE_CHUNK_ROWS + 1, true, false)).toBe("chunked");
    expect(choose(ENQUEUE_CHUNK_ROWS + 1, false, true)).toBe("chunked");
  });

  it("gives keyed batches a transaction of their own unless the caller has one", () => {
    expect(choose(2, false, true)).toBe("keyed");
    expect(choose(2, true, true)).toBe("statement");
    expect(choose(2, false, false)).toBe("statement");
  });
});
