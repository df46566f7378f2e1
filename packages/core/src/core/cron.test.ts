import { describe, expect, it } from "vitest";
import { dueTicks, parseCron } from "./cron.js";
import { ConfigError } from "./errors.js";

const at = (iso: string) => new Date(iso);
const isoList = (dates: Date[]) => dates.map((date) => date.toISOString());

describe("parseCron", () => {
  it("reads 5 fields (minutes) and 6 fields (seconds first)", () => {
    const minutes = parseCron("*/5 * * * *", "UTC", "cron");
    expect(minutes.nextTick(at("2026-01-01T00:03:10Z"))!.toISOString()).toBe("2026-01-01T00:05:00.000Z");
    const seconds = parseCron("*/2 * * * * *", "UTC", "cron");
    expect(seconds.nextTick(at("2026-01-01T00:00:01.500Z"))!.toISOString()).toBe("2026-01-01T00:00:02.000Z");
  });

  it("finds the next tick strictly after the given time", () => {
    const expression = parseCron("0 * * * *", "UTC", "cron");
    expect(expression.nextTick(at("2026-01-01T05:00:00Z"))!.toISOString()).toBe("2026-01-01T06:00:00.000Z");
  });

  it("reads the fields in the schedule's time zone", () => {
    // 09:00 in New York is 14:00 UTC in winter (EST, -5) and 13:00 UTC in summer (EDT, -4).
    const expression = parseCron("0 9 * * *", "America/New_York", "cron");
    expect(expression.nextTick(at("2026-01-15T00:00:00Z"))!.toISOString()).toBe("2026-01-15T14:00:00.000Z");
    expect(expression.nextTick(at("2026-07-15T00:00:00Z"))!.toISOString()).toBe("2026-07-15T13:00:00.000Z");
  });

  it("follows a DST change: a daily time moves in UTC, a time in the spring gap runs once after it", () => {
    // Europe/Berlin springs forward on 2026-03-29 at 02:00 local (01:00 UTC): 02:30 does not exist that day.
    const daily = parseCron("30 2 * * *", "Europe/Berlin", "cron");
    let tick = at("2026-03-27T00:00:00Z");
    const ticks: Date[] = [];
    for (let i = 0; i < 4; i++) ticks.push((tick = daily.nextTick(tick)!));
    expect(isoList(ticks)).toEqual([
      "2026-03-27T01:30:00.000Z", // 02:30 CET (+1)
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:00:00.000Z", // in the gap: the first valid time after it, 03:00 CEST
      "2026-03-30T00:30:00.000Z", // 02:30 CEST (+2)
    ]);
  });

  it("runs an interval schedule on both occurrences of the repeated hour when DST ends", () => {
    // Berlin falls back on 2026-10-25 at 03:00 CEST to 02:00 CET: 02:00–02:59 local happens twice.
    const halfHourly = parseCron("*/30 2 * * *", "Europe/Berlin", "cron");
    const ticks: Date[] = [];
    let tick = at("2026-10-24T23:00:00Z");
    for (let i = 0; i < 4; i++) ticks.push((tick = halfHourly.nextTick(tick)!));
    expect(isoList(ticks)).toEqual([
      "2026-10-25T00:00:00.000Z", // 02:00 CEST
      "2026-10-25T00:30:00.000Z", // 02:30 CEST
      "2026-10-25T01:00:00.000Z", // 02:00 CET
      "2026-10-25T01:30:00.000Z", // 02:30 CET
    ]);
  });

  it("refuses a bad expression, naming the field", () => {
    expect(() => parseCron("every five minutes", "UTC", "job \"a\": cron")).toThrow(ConfigError);
    expect(() => parseCron("61 * * * *", "UTC", "job \"a\": cron")).toThrow(/job "a": cron: invalid cron expression "61 \* \* \* \*"/);
    expect(() => parseCron("* * * * * * *", "UTC", "cron")).toThrow(/cron: invalid cron expression/);
    expect(() => parseCron("", "UTC", "cron")).toThrow(/cron must be a cron expression/);
    expect(() => parseCron("0 0 30 2 *", "UTC", "cron")).toThrow(/never fires/);
  });

  it("refuses an unknown time zone, naming the field", () => {
    expect(() => parseCron("* * * * *", "Mars/Olympus_Mons", "cron", "schedules[0].timezone")).toThrow(ConfigError);
    expect(() => parseCron("* * * * *", "Mars/Olympus_Mons", "cron", "schedules[0].timezone")).toThrow(
      /^schedules\[0\]\.timezone: unknown time zone "Mars\/Olympus_Mons"/,
    );
  });
});

describe("dueTicks", () => {
  const everyMinute = parseCron("* * * * *", "UTC", "cron");

  it("enqueues nothing before the first due tick", () => {
    const due = dueTicks(everyMinute, at("2026-01-01T00:05:00Z"), at("2026-01-01T00:04:59Z"), "skip", 10);
    expect(due).toEqual({ ticks: [], skipped: false, nextTick: at("2026-01-01T00:05:00Z") });
  });

  it("enqueues the one due tick under either policy, including a tick exactly at now", () => {
    for (const policy of ["skip", "catch-up"] as const) {
      const due = dueTicks(everyMinute, at("2026-01-01T00:05:00Z"), at("2026-01-01T00:05:00Z"), policy, 10);
      expect(isoList(due.ticks)).toEqual(["2026-01-01T00:05:00.000Z"]);
      expect(due.skipped).toBe(false);
      expect(due.nextTick!.toISOString()).toBe("2026-01-01T00:06:00.000Z");
    }
  });

  it("skip: only the most recent of many missed ticks", () => {
    const due = dueTicks(everyMinute, at("2026-01-01T00:05:00Z"), at("2026-01-01T03:00:30Z"), "skip", 10);
    expect(isoList(due.ticks)).toEqual(["2026-01-01T03:00:00.000Z"]);
    expect(due.skipped).toBe(true);
    expect(due.nextTick!.toISOString()).toBe("2026-01-01T03:01:00.000Z");
  });

  it("catch-up: the most recent `limit` missed ticks, oldest first", () => {
    const due = dueTicks(everyMinute, at("2026-01-01T00:05:00Z"), at("2026-01-01T03:00:30Z"), "catch-up", 3);
    expect(isoList(due.ticks)).toEqual(["2026-01-01T02:58:00.000Z", "2026-01-01T02:59:00.000Z", "2026-01-01T03:00:00.000Z"]);
    expect(due.skipped).toBe(true);
  });

  it("catch-up: every missed tick when they fit in the limit", () => {
    const due = dueTicks(everyMinute, at("2026-01-01T00:05:00Z"), at("2026-01-01T00:07:59Z"), "catch-up", 3);
    expect(isoList(due.ticks)).toEqual(["2026-01-01T00:05:00.000Z", "2026-01-01T00:06:00.000Z", "2026-01-01T00:07:00.000Z"]);
    expect(due.skipped).toBe(false);
  });

  it("agrees with walking forward tick by tick, in a time zone across a DST change", () => {
    const expression = parseCron("*/20 * * * *", "Europe/Berlin", "cron");
    const firstDue = at("2026-10-24T22:00:00Z");
    const now = at("2026-10-25T03:10:00Z");
    const walked: Date[] = [];
    for (let tick: Date | null = firstDue; tick && tick <= now; tick = expression.nextTick(tick)) walked.push(tick);
    const due = dueTicks(expression, firstDue, now, "catch-up", 1_000);
    expect(isoList(due.ticks)).toEqual(isoList(walked));
    // 22:00 to 03:00 UTC at three per hour, the repeated local hour included: 15 intervals, 16 ticks.
    expect(due.ticks).toHaveLength(16);
  });
});
