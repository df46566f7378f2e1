import { type AnyJobDefinition, Conveyor, defineJob } from "conveyor-jobs";
import pino from "pino";
import { z } from "zod";
import { now, sleep } from "../lib/clock.js";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";

/**
 * Limits per key (issue 24), Conveyor only: the claim rate of one worker
 * over a queue of `jobs` waiting jobs spread over `keys` keys,
 * - `unlimited`: the queue has no key limits (the fast claim);
 * - `notBinding`: every key limited to 1,000,000 at once (the key claim,
 *   whose limit never binds); the target is at least 80% of `unlimited`;
 * - `hotBinding`: a tenth of the jobs belong to `hotKeys` keys, each
 *   limited to 1 at once, the rest to keys whose default never binds; the
 *   rate of the other keys' jobs, the target being at least 80% of
 *   `notBinding`.
 * Each phase runs a fresh worker for `phaseMs` after `warmupMs`, on the
 * same filled database (each phase takes a few percent of the backlog), and
 * counts the handlers that started in the measured span; the phases
 * alternate for `rounds` rounds, and the ratios are medians of each
 * round's own.
 */
export interface KeyLimitBenchOptions {
  jobs: number;
  keys: number;
  hotKeys: number;
  phaseMs: number;
  warmupMs: number;
  /** Rounds of the three phases; each figure is the median over rounds. */
  rounds: number;
  /** Worker slots and claim batch (the bench's Conveyor settings are 800 and 200). */
  concurrency: number;
  claimBatchSize: number;
  log: (message: string) => void;
}

/** Medians over the rounds. */
export interface KeyLimitBenchResult {
  unlimited: number;
  notBinding: number;
  hotBinding: number;
  /** notBinding / unlimited, within each round. */
  notBindingRatio: number;
  /** hotBinding (other keys only) / notBinding, within each round. */
  hotBindingRatio: number;
}

const QUEUE = "bench-keys";
const FILL_CHUNK = 50_000;

export async function keyLimitBench(options: KeyLimitBenchOptions): Promise<KeyLimitBenchResult> {
  const database = await createDatabase("keys");
  let started = 0;
  let counting = false;
  const job = defineJob({
    kind: "bench.keyed",
    schema: z.object({ n: z.number() }),
    queue: QUEUE,
    handler: ({ job: info }) => {
      // Hot keys' jobs are not counted: the figure is the other keys' rate.
      if (counting && !(excludeHot && hotJobs.has(info.id))) started += 1;
    },
  }) as unknown as AnyJobDefinition;
  const hotJobs = new Set<string>();
  let excludeHot = false;
  const conveyor = new Conveyor({ connectionString: database.url, jobs: [job], logger: pino({ level: "silent" }), poolSize: 8 });
  try {
    await conveyor.migrate();
    const fillStarted = now();
    const hotShare = Math.floor(options.jobs / 10);
    for (let from = 0; from < options.jobs; from += FILL_CHUNK) {
      const count = Math.min(FILL_CHUNK, options.jobs - from);
      const enqueued = await conveyor.enqueueMany(
        Array.from({ length: count }, (_, i) => {
          const n = from + i;
          // The first tenth (the oldest, so first in claim order) belongs to the hot keys.
          const limitKey = n < hotShare ? `hot-${n % options.hotKeys}` : `key-${n % options.keys}`;
          return { job, payload: { n }, limitKey };
        }),
      );
      enqueued.forEach((entry, i) => {
        if (from + i < hotShare) hotJobs.add(entry.id);
      });
    }
    options.log(`key limits: filled ${options.jobs.toLocaleString("en-US")} jobs over ${options.keys.toLocaleString("en-US")} keys in ${((now() - fillStarted) / 1000).toFixed(1)} s`);
    await analyzeDatabase(database.url);

    const phase = async (name: string, round: number): Promise<number> => {
      const worker = conveyor.worker({ concurrency: options.concurrency, claimBatchSize: options.claimBatchSize, queues: [QUEUE], pollIntervalMs: 50 });
      await worker.start();
      await sleep(options.warmupMs);
      started = 0;
      counting = true;
      const from = now();
      await sleep(options.phaseMs);
      counting = false;
      const rate = (started * 1000) / (now() - from);
      await worker.stop({ graceMs: 5_000 });
      options.log(`key limits: round ${round + 1}, ${name}: ${Math.round(rate).toLocaleString("en-US")} jobs/s`);
      return rate;
    };

    // The three phases alternate, round after round, and each ratio is
    // taken within its round: on a machine shared with other work, the
    // rates drift between rounds more than they differ within one.
    const unlimited: number[] = [];
    const notBinding: number[] = [];
    const hotBinding: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      excludeHot = false;
      unlimited.push(await phase("no key limits", round));
      await conveyor.keyLimits.set(QUEUE, { concurrency: 1_000_000 });
      notBinding.push(await phase("a key limit that never binds", round));
      for (let k = 0; k < options.hotKeys; k++) await conveyor.keyLimits.set(QUEUE, { concurrency: 1 }, { key: `hot-${k}` });
      excludeHot = true;
      hotBinding.push(await phase(`${options.hotKeys} hot keys held to 1 at once (other keys' jobs)`, round));
      await conveyor.keyLimits.delete(QUEUE);
    }
    const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor((values.length - 1) / 2)]!;
    return {
      unlimited: median(unlimited),
      notBinding: median(notBinding),
      hotBinding: median(hotBinding),
      notBindingRatio: median(notBinding.map((rate, i) => rate / unlimited[i]!)),
      hotBindingRatio: median(hotBinding.map((rate, i) => rate / notBinding[i]!)),
    };
  } finally {
    await conveyor.close();
    await database.drop();
  }
}
