import { describe, expect, it } from "vitest";
import { ConfigError } from "./errors.js";
import { resolveBackoff, retryDelayMs } from "./backoff.js";

describe("retryDelayMs", () => {
  it("doubles from the base and stops at the cap", () => {
    const policy = resolveBackoff({ baseMs: 100, capMs: 1_000, jitter: 0 });
    expect([1, 2, 3, 4, 5, 6].map((attempt) => retryDelayMs(policy, attempt))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it("jitter only shortens, by at most its share", () => {
    const policy = resolveBackoff({ baseMs: 1_000, capMs: 1_000, jitter: 0.25 });
    expect(retryDelayMs(policy, 1, () => 0)).toBe(1_000);
    expect(retryDelayMs(policy, 1, () => 0.999999)).toBe(750);
    expect(retryDelayMs(policy, 1, () => 0.5)).toBe(875);
  });

  it("survives huge attempt numbers without overflow", () => {
    const policy = resolveBackoff({ baseMs: 1_000, capMs: 5_000, jitter: 0 });
    expect(retryDelayMs(policy, 5_000)).toBe(5_000);
  });

  it("refuses policies that cannot work, naming the field", () => {
    expect(() => resolveBackoff({ baseMs: -1 })).toThrow(ConfigError);
    expect(() => resolveBackoff({ baseMs: 10, capMs: 5 })).toThrow(/backoff.capMs must be >= backoff.baseMs/);
    expect(() => resolveBackoff({ jitter: 2 })).toThrow(/backoff.jitter/);
  });
});
