import { describe, expect, it } from "vitest";
import { type JobRequestFields, requestDifferences, sameJsonValue } from "./idempotency.js";

const base: JobRequestFields = { kind: "email.send", payload: { to: "a@example.com", tags: ["x", "y"] }, queue: "default", priority: 0, maxAttempts: 5 };

describe("requestDifferences", () => {
  it("finds none for the same request, whatever the payload's key order", () => {
    expect(requestDifferences(base, { ...base, payload: { tags: ["x", "y"], to: "a@example.com" } })).toEqual([]);
  });

  it("names every field that defines the job, in a fixed order", () => {
    expect(requestDifferences(base, { kind: "other", payload: { to: "b" }, queue: "bulk", priority: 1, maxAttempts: 2 })).toEqual([
      "kind",
      "payload",
      "queue",
      "priority",
      "maxAttempts",
    ]);
    expect(requestDifferences(base, { ...base, priority: -1 })).toEqual(["priority"]);
    expect(requestDifferences(base, { ...base, maxAttempts: 6 })).toEqual(["maxAttempts"]);
    expect(requestDifferences(base, { ...base, queue: "other" })).toEqual(["queue"]);
  });
});

describe("sameJsonValue", () => {
  it("compares as JSON values: key order ignored, array order kept, undefined members absent", () => {
    expect(sameJsonValue({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toBe(true);
    expect(sameJsonValue([1, 2], [2, 1])).toBe(false);
    expect(sameJsonValue({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJsonValue({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameJsonValue({ a: null }, { a: {} })).toBe(false);
    expect(sameJsonValue([], {})).toBe(false);
    expect(sameJsonValue("1", 1)).toBe(false);
    expect(sameJsonValue(null, null)).toBe(true);
  });
});
