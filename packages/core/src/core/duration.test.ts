import { describe, expect, it } from "vitest";
import { formatDuration, parseDuration } from "./duration.js";
import { ValidationError } from "./errors.js";

describe("parseDuration", () => {
  it("reads each unit", () => {
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("45s")).toBe(45_000);
    expect(parseDuration("30m")).toBe(1_800_000);
    expect(parseDuration("12h")).toBe(43_200_000);
    expect(parseDuration("7d")).toBe(604_800_000);
  });

  it("reads plain milliseconds, fractions and zero", () => {
    expect(parseDuration("86400000")).toBe(86_400_000);
    expect(parseDuration("1.5h")).toBe(5_400_000);
    expect(parseDuration("0")).toBe(0);
    expect(parseDuration(" 2d ")).toBe(172_800_000);
  });

  it("refuses anything else, naming the field", () => {
    for (const bad of ["", "d", "7 days", "-1d", "7w", "1h30m", "abc", "1e3", "7D"]) {
      expect(() => parseDuration(bad, "finishedOlderThan"), bad).toThrow(ValidationError);
      expect(() => parseDuration(bad, "finishedOlderThan"), bad).toThrow(/^finishedOlderThan must be a duration/);
    }
  });
});

describe("formatDuration", () => {
  it("spells a duration in its largest exact unit, which parseDuration reads back", () => {
    expect([604_800_000, 129_600_000, 90_000, 1_500, 0].map(formatDuration)).toEqual(["7d", "36h", "90s", "1500ms", "0ms"]);
    for (const ms of [604_800_000, 129_600_000, 90_000, 1_500, 0, 60_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});
