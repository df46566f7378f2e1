/**
 * The settle rule for dependents (src/core/dependents.ts) decides in
 * TypeScript, and job_dependents_settle decides inside the database with
 * the SQL the store renders from the same rules and transition table. Every
 * combination of a dependent's state and counts runs through both: the
 * TypeScript function, and the very expression the routine installs,
 * evaluated by PostgreSQL.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DependentCounts, settleDependent } from "../packages/core/src/core/dependents.js";
import { JOB_STATUSES } from "../packages/core/src/core/states.js";
import { jobDependentsSettle } from "../packages/core/src/store/routines/job-dependents-settle.js";
import { dependentSettleCase, dependentSettleEvent } from "../packages/core/src/store/sql/dependent-settle.js";
import { connectTestClient } from "./helpers/database.js";

/** Every state, with every count and policy that changes a decision. */
function everyCase(): DependentCounts[] {
  const cases: DependentCounts[] = [];
  for (const status of JOB_STATUSES)
    for (const endedByDependency of [false, true])
      for (const blocking of [0, 1])
        for (const pending of [0, 1])
          for (const failed of [0, 1])
            for (const runIf of ["all", "any_failed"] as const)
              for (const onFailure of [null, "fail", "cancel", "run"] as const)
                cases.push({ status, endedByDependency, blocking, pending, failed, runIf, onFailure });
  return cases;
}

describe("settling a dependent", () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = await connectTestClient();
  });
  afterAll(() => client.end());

  it("decides the same in TypeScript and in the SQL job_dependents_settle runs, for every case", async () => {
    const cases = everyCase();
    const column = <K extends keyof DependentCounts>(key: K) => cases.map((c) => c[key]);
    const { rows } = await client.query<{ decided: string }>(
      `SELECT ${dependentSettleCase(`(${dependentSettleEvent("c.status")})`, "c.status")} AS decided
       FROM unnest($1::text[], $2::boolean[], $3::int[], $4::int[], $5::int[], $6::text[], $7::text[]) WITH ORDINALITY
            AS x(status, ended_by_dependency, blocking, pending, failed, run_if, on_failure, n)
       CROSS JOIN LATERAL (SELECT x.status) AS c(status)
       CROSS JOIN LATERAL (SELECT x.ended_by_dependency, x.blocking, x.pending, x.failed, x.run_if) AS s(ended_by_dependency, blocking, pending, failed, run_if)
       CROSS JOIN LATERAL (SELECT x.on_failure) AS edge(on_failure)
       ORDER BY x.n`,
      [column("status"), column("endedByDependency"), column("blocking"), column("pending"), column("failed"), column("runIf"), column("onFailure")],
    );
    const differ = cases
      .map((c, i) => ({ case: c, typescript: settleDependent(c), sql: rows[i]!.decided }))
      .filter((r) => r.typescript !== r.sql);
    expect(rows).toHaveLength(cases.length);
    expect(differ).toEqual([]);
  });

  it("is the expression the installed routine holds", () => {
    expect(jobDependentsSettle.sql).toContain(dependentSettleEvent("c.status"));
    expect(jobDependentsSettle.sql).toContain(dependentSettleCase("g.event", "g.old_status"));
  });

  it("moves what the lifecycle says: a failed blocker kills or cancels by its policy, a reopened one re-arms, a met set queues", () => {
    const base: DependentCounts = { status: "waiting", endedByDependency: false, blocking: 0, pending: 0, failed: 0, runIf: "all", onFailure: null };
    expect(settleDependent({ ...base, blocking: 1, failed: 1, onFailure: "fail" })).toBe("dead");
    expect(settleDependent({ ...base, blocking: 1, failed: 1, onFailure: "cancel" })).toBe("cancelled");
    expect(settleDependent({ ...base, status: "dead", endedByDependency: true, pending: 1 })).toBe("waiting");
    expect(settleDependent({ ...base, status: "dead", endedByDependency: false, pending: 1 })).toBe("dead");
    expect(settleDependent({ ...base, runIf: "any_failed" })).toBe("cancelled");
    expect(settleDependent(base)).toBe("queued");
    expect(settleDependent({ ...base, status: "queued", blocking: 1, onFailure: "fail" })).toBe("dead");
  });
});
