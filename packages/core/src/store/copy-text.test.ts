import { describe, expect, it } from "vitest";
import { copyLines, copyText, runAtMicros, timestampFromMicros } from "./copy-text.js";
import type { JobInsertRow } from "./job-insert-row.js";

const row = (over: Partial<JobInsertRow> = {}): JobInsertRow => ({
  id: "01890a5d-ac96-774b-bcce-b302099a8057",
  tenant: "default",
  queue: "mail",
  kind: "email.send",
  payload: '{"n":1}',
  priority: 0,
  maxAttempts: 3,
  runAt: null,
  delayMs: null,
  idempotencyKey: null,
  unique: null,
  ...over,
});

describe("COPY text", () => {
  it("escapes the characters that would end a column or a line, and nothing else", () => {
    expect(copyText("plain \"quoted\" ünïcode")).toBe("plain \"quoted\" ünïcode");
    expect(copyText("a\\b\tc\nd\re")).toBe("a\\\\b\\tc\\nd\\re");
  });

  it("writes microseconds that a Date cannot hold", () => {
    expect(timestampFromMicros(1_700_000_000_123_456)).toBe("2023-11-14T22:13:20.123456Z");
    expect(timestampFromMicros(1_700_000_000_000_007)).toBe("2023-11-14T22:13:20.000007Z");
  });

  it("puts a job at now(), now() plus its delay, or its own time", () => {
    const now = 1_700_000_000_123_456;
    expect(runAtMicros(row(), now)).toBe(now);
    expect(runAtMicros(row({ delayMs: 1_234.5678 }), now)).toBe(now + 1_234_568);
    expect(runAtMicros(row({ runAt: new Date(1_800_000_000_000) }), now)).toBe(1_800_000_000_000_000);
  });

  it("writes one tab-separated line per row", () => {
    const traced = { traceContext: '{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}' };
    const lines = copyLines(
      [row({ payload: '{"s":"a\\tb"}' }), row({ priority: -4, delayMs: 5, limitKey: "host\ta", ...traced })],
      1_700_000_000_000_000,
    );
    expect(lines.split("\n")).toEqual([
      '01890a5d-ac96-774b-bcce-b302099a8057\tdefault\tmail\temail.send\t{"s":"a\\\\tb"}\t0\t3\t2023-11-14T22:13:20.000000Z\t\\N\t\\N',
      `01890a5d-ac96-774b-bcce-b302099a8057\tdefault\tmail\temail.send\t{"n":1}\t-4\t3\t2023-11-14T22:13:20.005000Z\t${traced.traceContext}\thost\\ta`,
      "",
    ]);
  });

  it("refuses a row with a key: only an INSERT can settle its conflict", () => {
    expect(() => copyLines([row({ idempotencyKey: "k" })], 0)).toThrow(/must be inserted/);
  });
});
