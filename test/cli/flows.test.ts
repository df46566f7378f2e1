/**
 * `conveyor flows list|show|cancel` and the links `conveyor jobs show`
 * prints, as real processes (the built CLI) against a schema of this file's own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob, type EnqueuedFlow } from "../../packages/core/src/index.js";
import { flowDetailJson, flowSummaryJson } from "../../packages/core/src/wire/flow-json.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { type CliResult, runCli, silent, stderrLines } from "./support.js";

const step = defineJob({ kind: "step", schema: z.object({ n: z.number() }), handler: async () => {} });

let test: TestConveyor;
let flow: EnqueuedFlow;
const MISSING = "0190f5c2-0000-7000-8000-000000000000";
const cli = (...args: string[]) => runCli([...args, "--schema", test.schema]);
const ok = (result: CliResult) => {
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
};

beforeAll(async () => {
  test = await createTestConveyor({ jobs: [step], logger: silent });
  flow = await test.conveyor.flows.enqueue({
    name: "order 1001",
    tenant: "acme",
    jobs: {
      charge: { job: "step", payload: { n: 1 } },
      reserve: { job: "step", payload: { n: 2 } },
      ship: { job: "step", payload: { n: 3 }, dependsOn: ["charge", { node: "reserve", onFailure: "run" }] },
      notify: { job: "step", payload: { n: 4 }, dependsOn: ["ship"] },
    },
  });
  await test.conveyor.flows.enqueueBatch({ tenant: "globex", jobs: [{ job: "step", payload: { n: 5 } }], callback: { job: "step", payload: { n: 6 } } });
});
afterAll(() => test?.cleanup());

describe("conveyor flows", () => {
  it("lists flows and batches as a table and as the API's JSON, filtered by kind and tenant", async () => {
    const lines = ok(await cli("flows", "list")).trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+KIND\s+NAME\s+TENANT\s+CREATED$/);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatch(new RegExp(`^${flow.id}\\s+flow\\s+order 1001\\s+acme\\s+\\d{4}-`));
    const page = JSON.parse(ok(await cli("flows", "list", "--json")));
    expect(page).toEqual({ items: (await test.conveyor.flows.list()).items.map(flowSummaryJson), nextCursor: null });
    const batches = JSON.parse(ok(await cli("flows", "list", "--kind", "batch", "--json")));
    expect(batches.items.map((item: { kind: string }) => item.kind)).toEqual(["batch"]);
    const acme = JSON.parse(ok(await cli("flows", "list", "--tenant", "acme", "--json")));
    expect(acme.items.map((item: { id: string }) => item.id)).toEqual([flow.id]);
    const first = JSON.parse(ok(await cli("flows", "list", "--limit", "1", "--json")));
    expect(first.nextCursor).toEqual(expect.any(String));
    expect(ok(await cli("flows", "list", "--limit", "1"))).toContain(`more: --cursor ${first.nextCursor}`);
    expect(ok(await cli("flows", "list", "--tenant", "initech")).trim()).toBe("no flows");
  });

  it("shows a flow level by level, each job with its status and what it waits for; --json is the API's", async () => {
    const text = ok(await cli("flows", "show", flow.id));
    expect(text).toMatch(/^name:\s+order 1001$/m);
    expect(text).toMatch(/^jobs:\s+2 waiting, 2 queued$/m);
    const table = text.slice(text.indexOf("LEVEL")).trimEnd().split("\n");
    expect(table[0]).toMatch(/^LEVEL\s+NODE\s+STATUS\s+KIND\s+JOB\s+WAITS FOR$/);
    expect(table.slice(1).map((line) => line.split(/\s{2,}/).filter((_, i) => i !== 4))).toEqual([
      ["0", "charge", "queued", "step", "-"],
      ["0", "reserve", "queued", "step", "-"],
      ["1", "ship", "waiting", "step", expect.stringMatching(/^(charge, reserve|reserve, charge)$/)],
      ["2", "notify", "waiting", "step", "ship"],
    ]);
    const json = JSON.parse(ok(await cli("flows", "show", flow.id, "--json")));
    expect(json).toEqual(flowDetailJson((await test.conveyor.flows.get(flow.id))!));
  });

  it("prints a job's flow, parents and children in jobs show", async () => {
    const text = ok(await cli("jobs", "show", flow.jobs.ship!.id));
    expect(text).toContain(`flow: ${flow.id} (node ship)`);
    expect(text).toMatch(/^dependencies pending: 2, failed: 0, blocking: 0$/m);
    const parents = text.slice(text.indexOf("waits for:"), text.indexOf("waited on by:"));
    expect(parents).toMatch(new RegExp(`${flow.jobs.charge!.id}\\s+charge\\s+step\\s+queued\\s+fail`));
    expect(parents).toMatch(new RegExp(`${flow.jobs.reserve!.id}\\s+reserve\\s+step\\s+queued\\s+run`));
    expect(text.slice(text.indexOf("waited on by:"))).toMatch(new RegExp(`${flow.jobs.notify!.id}\\s+notify\\s+step\\s+waiting\\s+fail`));
    // A job with no links prints none of it.
    const loose = await test.conveyor.enqueue("step", { n: 9 });
    expect(ok(await cli("jobs", "show", loose.id))).not.toContain("waits for");
  });

  it("cancels a flow's jobs, and says so as JSON too", async () => {
    const other = await test.conveyor.flows.enqueue({ jobs: { a: { job: "step", payload: { n: 1 } }, b: { job: "step", payload: { n: 2 }, dependsOn: ["a"] } } });
    expect(ok(await cli("flows", "cancel", other.id)).trim()).toBe(`cancelled 2 jobs of flow ${other.id}`);
    expect(JSON.parse(ok(await cli("flows", "cancel", other.id, "--json")))).toEqual({ id: other.id, cancelled: 0, cancelRequested: 0 });
    const shown = JSON.parse(ok(await cli("flows", "show", other.id, "--json")));
    expect(shown.counts.cancelled).toBe(2);
  });

  it("refuses bad input in one line on stderr with a non-zero exit, and has --help", async () => {
    for (const [args, mentions] of [
      [["flows", "show", "nope"], /value 'nope' is invalid for argument 'id'\. expected a UUID/],
      [["flows", "show", MISSING], new RegExp(`^conveyor: flow ${MISSING} not found$`)],
      [["flows", "cancel", MISSING], new RegExp(`^conveyor: flow ${MISSING} not found$`)],
      [["flows", "list", "--kind", "dag"], /argument 'dag' is invalid/],
      [["flows", "list", "--limit", "0"], /--limit/],
      [["flows", "list", "--cursor", "garbage"], /^conveyor: cursor is not one this API returned$/],
    ] as const) {
      const result = await cli(...args);
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(stderrLines(result), args.join(" ")).toHaveLength(1);
      expect(stderrLines(result)[0]).toMatch(mentions);
    }
    for (const command of ["list", "show", "cancel"]) {
      const help = await runCli(["flows", command, "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: conveyor flows ${command} `));
    }
  });
});
