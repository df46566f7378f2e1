import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "./define-job.js";
import { quoted } from "./validate.js";

describe("quoted", () => {
  it("writes a refused value as JSON: a string in quotes, a number without", () => {
    expect(quoted("10")).toBe('"10"');
    expect(quoted(10)).toBe("10");
    expect(quoted(null)).toBe("null");
    expect(quoted({ maxSize: "10" })).toBe('{"maxSize":"10"}');
    expect(quoted([1, "2"])).toBe('[1,"2"]');
  });

  it("writes what JSON has no text for as JavaScript does, never as null", () => {
    expect(quoted(Number.NaN)).toBe("NaN");
    expect(quoted(Number.POSITIVE_INFINITY)).toBe("Infinity");
    expect(quoted(10n)).toBe("10n");
    expect(quoted(undefined)).toBe("undefined");
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(quoted(cyclic)).toBe("[object Object]");
  });

  it("cuts a long value, saying how long it was", () => {
    expect(quoted("x".repeat(100))).toBe(`"${"x".repeat(64)}"… (100 characters)`);
  });
});

describe("a refused option's value in its message", () => {
  it("tells a batch maxSize of the string \"10\" from the number 10", () => {
    const define = (maxSize: unknown) => () => defineJob({ kind: "x", schema: z.object({}), batch: { maxSize: maxSize as number }, batchHandler: () => [] });
    expect(define("10")).toThrow(/batch\.maxSize must be an integer from 1 to 1000, got "10"$/);
    expect(define(0)).toThrow(/got 0$/);
    expect(define(Number.NaN)).toThrow(/got NaN$/);
  });

  it("quotes a string given for a job's timeoutMs or its backoff", () => {
    expect(() => defineJob({ kind: "x", schema: z.object({}), handler: () => {}, timeoutMs: "5000" as never })).toThrow(/got "5000"$/);
    expect(() => defineJob({ kind: "x", schema: z.object({}), handler: () => {}, backoff: { baseMs: "100" } as never })).toThrow(/got "100"$/);
  });
});
