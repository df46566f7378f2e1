import { describe, expect, it } from "vitest";
import { MAX_STEP_RESULT_BYTES } from "./defaults.js";
import { StepError } from "./errors.js";
import { encodeStepResult } from "./steps.js";

describe("encodeStepResult", () => {
  it("stores JSON as it is, and undefined as null", () => {
    expect(encodeStepResult("a", { rows: [{ id: 1 }], at: new Date(0) })).toBe('{"rows":[{"id":1}],"at":"1970-01-01T00:00:00.000Z"}');
    expect(encodeStepResult("a", undefined)).toBe("null");
  });

  it("refuses a value that is not JSON with a StepError naming the step, what is there and where", () => {
    // The shape of a pg query result: plain fields first, then the type parsers, functions.
    const queryResult = { command: "UPDATE", rowCount: 1, rows: [], fields: [], _types: { getTypeParser: () => String } };
    const refusals: Array<[unknown, string]> = [
      [queryResult, 'step "upgrade" returned a value that is not JSON: a function at result._types.getTypeParser'],
      [{ n: 10n }, 'step "upgrade" returned a value that is not JSON: a BigInt at result.n'],
      [[1, Number.NaN], 'step "upgrade" returned a value that is not JSON: NaN at result.1'],
      [{ s: Symbol("s") }, 'step "upgrade" returned a value that is not JSON: a symbol at result.s'],
      [{ text: "a\u0000b" }, 'step "upgrade" returned a value that is not JSON: a NUL character (\\u0000) at result.text'],
    ];
    for (const [value, message] of refusals) {
      expect(() => encodeStepResult("upgrade", value)).toThrow(new StepError(message));
    }
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => encodeStepResult("upgrade", cycle)).toThrow('step "upgrade" returned a value that is not JSON: a circular reference at result.self');
  });

  it("refuses more than MAX_STEP_RESULT_BYTES of JSON", () => {
    expect(() => encodeStepResult("big", "x".repeat(MAX_STEP_RESULT_BYTES))).toThrow(StepError);
    expect(() => encodeStepResult("big", "x".repeat(MAX_STEP_RESULT_BYTES))).toThrow(/MAX_STEP_RESULT_BYTES/);
  });
});
