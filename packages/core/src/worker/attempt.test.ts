import { describe, expect, it } from "vitest";
import type { ClaimedJob } from "../core/model.js";
import { Attempt } from "./attempt.js";

const running = () => new Attempt({ id: "job-1", executionId: "execution-1" } as ClaimedJob, performance.now(), 60_000);

describe("Attempt", () => {
  it("gives a signal read after the abort already aborted, with the reason", () => {
    const job = running();
    const reason = new Error("cancelled");
    job.abort(reason);
    expect(job.aborted).toBe(true);
    expect(job.signal.aborted).toBe(true);
    expect(job.signal.reason).toBe(reason);
  });

  it("aborts a signal read before the abort, once, with the first reason", () => {
    const job = running();
    const signal = job.signal;
    const seen: unknown[] = [];
    signal.addEventListener("abort", () => seen.push(signal.reason));
    const first = new Error("first");
    job.abort(first);
    job.abort(new Error("second"));
    expect(seen).toEqual([first]);
  });

  it("calls the handler with its context and settles with its value, sync or async, and with what it throws", async () => {
    expect(await running().run((n: number) => n + 1, 41)).toEqual({ kind: "returned", value: 42 });
    expect(await running().run(async (word: string) => `${word} later`, "done")).toEqual({ kind: "returned", value: "done later" });
    const boom = new Error("boom");
    expect(await running().run(() => { throw boom; }, null)).toEqual({ kind: "threw", error: boom });
    expect(await running().run(() => Promise.reject(boom), null)).toEqual({ kind: "threw", error: boom });
    // A result whose `then` throws is a failure too, never an escape.
    const hostile = { then: () => { throw boom; } };
    expect(await running().run(() => hostile, null)).toEqual({ kind: "threw", error: boom });
  });

  it("stops waiting for a handler when forced, and ignores what the handler does afterwards", async () => {
    const job = running();
    let rejectLate!: (error: Error) => void;
    const settled = job.run(() => new Promise((_, reject) => (rejectLate = reject)), null);
    const end = { kind: "timeout" as const, reason: new Error("too slow") };
    job.force(end);
    expect(await settled).toEqual({ kind: "forced", end });
    expect(job.signal.aborted).toBe(true);
    rejectLate(new Error("too late")); // observed by run(): no unhandled rejection fails this file
    await new Promise((resolve) => setImmediate(resolve));
  });

  it("settles at once as forced when forced before the handler started, and never calls it", async () => {
    const job = running();
    const end = { kind: "shutdown" as const, reason: new Error("stopping") };
    job.force(end);
    let called = false;
    expect(await job.run(() => (called = true), null)).toEqual({ kind: "forced", end });
    expect(called).toBe(false);
  });

  describe("phases", () => {
    it("holds its lease from the claim until the outcome is on its way, then is done", async () => {
      const job = running();
      expect([job.phase, job.holdsLease]).toEqual(["claimed", true]);
      const settled = job.run(() => {
        expect([job.phase, job.holdsLease]).toEqual(["running", true]);
      }, null);
      await settled;
      job.startWriting();
      expect([job.phase, job.holdsLease, job.committed]).toEqual(["writing", false, false]);
      job.finish();
      expect(job.phase).toBe("done");
    });

    it("gives the lease up while a transaction commits, and takes it back when the commit fails", () => {
      const job = running();
      void job.run(() => new Promise(() => {}), null);
      job.beginCommit();
      expect([job.phase, job.holdsLease]).toEqual(["committing", false]);
      job.commitFailed();
      expect([job.phase, job.holdsLease]).toEqual(["running", true]);
    });

    it("stays committed once a transaction committed, through the executor's write and after it", () => {
      const job = running();
      void job.run(() => new Promise(() => {}), null);
      job.beginCommit();
      job.commitSucceeded();
      job.startWriting();
      expect([job.phase, job.committed, job.holdsLease]).toEqual(["committed", true, false]);
      job.finish();
      expect([job.phase, job.committed]).toEqual(["done", true]);
    });

    it("a commit that fails after the handler settled leaves the attempt writing", () => {
      const job = running();
      job.beginCommit();
      job.startWriting();
      job.commitFailed();
      expect(job.phase).toBe("writing");
    });

    it("observes a cancel request once, aborting the signal with its reason", () => {
      const job = running();
      const reason = new Error("cancelled");
      expect(job.observeCancel(reason)).toBe(true);
      expect(job.observeCancel(new Error("again"))).toBe(false);
      expect([job.cancelObserved, job.signal.reason]).toEqual([true, reason]);
    });
  });
});
