import { describe, expect, it } from "vitest";
import { isUuid, uuidv7, uuidv7ArrayLiteral } from "./ids.js";

describe("uuidv7", () => {
  it("is a canonical UUID with version 7 and the RFC 9562 variant", () => {
    for (let i = 0; i < 1_000; i++) {
      const id = uuidv7();
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe("7");
      expect("89ab").toContain(id[19]);
    }
  });

  it("carries the given millisecond in its first 48 bits", () => {
    const ms = Date.UTC(2030, 0, 1);
    expect(Number.parseInt(uuidv7(ms).replace(/-/g, "").slice(0, 12), 16)).toBe(ms);
  });

  it("stays unique and increasing across many refills of the random pool", () => {
    // 20,000 ids draw well over 4 KiB of random bytes many times over.
    const ids = Array.from({ length: 20_000 }, () => uuidv7());
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
  });

  it("differs in its random bits between ids of the same millisecond", () => {
    const ms = Date.UTC(2031, 0, 1);
    const tails = new Set(Array.from({ length: 100 }, () => uuidv7(ms).slice(19)));
    expect(tails.size).toBe(100);
  });

  it("makes a uuid[] literal of fresh ids, in the order uuidv7 would", () => {
    const ms = Date.UTC(2032, 0, 1);
    expect(uuidv7ArrayLiteral(0, ms)).toBe("{}");
    const literal = uuidv7ArrayLiteral(1_000, ms);
    expect(literal.startsWith("{") && literal.endsWith("}")).toBe(true);
    const ids = literal.slice(1, -1).split(",");
    expect(ids).toHaveLength(1_000);
    for (const id of ids) {
      expect(isUuid(id)).toBe(true);
      expect(id[14]).toBe("7");
      expect(Number.parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBeGreaterThanOrEqual(ms);
    }
    for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true);
    expect(uuidv7(ms) > ids.at(-1)!).toBe(true);
  });
});
