import { describe, expect, it } from "vitest";
import { StopWaiting, waitFor } from "./wait-for.js";

describe("waitFor", () => {
  it("returns the first truthy value, trying again after a falsy value or an error", async () => {
    let calls = 0;
    const check = () => {
      calls += 1;
      if (calls === 1) throw new Error("not yet");
      return calls === 3 ? { calls } : null;
    };
    const value = await waitFor("the third try", check, 1_000, 1);
    expect(value).toEqual({ calls: 3 });
  });

  it("names what it waited for and the last thing it saw when it times out", async () => {
    await expect(waitFor("the answer", () => 0, 30, 5)).rejects.toThrow(/^timed out after 30 ms waiting for the answer \(last: 0\)$/);
    await expect(waitFor("the server", () => Promise.reject(new Error("ECONNREFUSED")), 30, 5)).rejects.toThrow(
      "timed out after 30 ms waiting for the server (last: ECONNREFUSED)",
    );
  });

  it("stops at once when the check throws StopWaiting", async () => {
    const started = Date.now();
    const check = () => {
      throw new StopWaiting("it exited");
    };
    await expect(waitFor("a process that exited", check, 10_000, 5)).rejects.toThrow("it exited");
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
