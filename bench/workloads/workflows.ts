import { now, sleep } from "../lib/clock.js";
import type { BenchConfig } from "../lib/config.js";
import { DeadlineError, WorkerProcess } from "../lib/worker-process.js";
import type { BenchSystem, SystemInstance, WorkflowGraph } from "../systems/system.js";

/** One job waiting on `n`: nodes 0…n-1 are ready, node n depends on all of them. */
export function fanInGraph(n: number): WorkflowGraph {
  const dependsOn: number[][] = Array.from({ length: n }, () => []);
  dependsOn.push(Array.from({ length: n }, (_, i) => i));
  return { shape: "fan-in", dependsOn, edges: n };
}

/** `n` jobs, each waiting on the one before. */
export function chainGraph(n: number): WorkflowGraph {
  return { shape: "chain", dependsOn: Array.from({ length: n }, (_, i) => (i === 0 ? [] : [i - 1])), edges: n - 1 };
}

/**
 * `layers` layers of `width` jobs; job i of layer k+1 waits on jobs i, i+1,
 * …, i+d-1 (modulo `width`) of layer k, so every job but the last layer's
 * has d dependents and every job but the first layer's has d dependencies.
 */
export function layeredGraph(layers: number, width: number, d: number): WorkflowGraph {
  const dependsOn: number[][] = [];
  for (let k = 0; k < layers; k++) {
    for (let i = 0; i < width; i++) {
      dependsOn.push(k === 0 ? [] : Array.from({ length: d }, (_, j) => (k - 1) * width + ((i + j) % width)));
    }
  }
  return { shape: "layered", dependsOn, edges: (layers - 1) * width * d };
}

export interface WorkflowResult {
  /** From just before the enqueue call until no job of the graph is left unfinished (s); over the cap when capped. */
  seconds: number;
  /** The enqueue call alone (s). */
  enqueueSeconds: number;
  /** `seconds` per dependency edge (µs): wall time, handlers, claims and completions included. */
  usPerEdge: number;
  /** Server time spent releasing dependents per edge (µs); null where not measured. */
  serverUsPerEdge: number | null;
  /** Jobs finished (all of them unless capped). */
  finished: number;
  capped: boolean;
}

/**
 * Workload 6: an idle worker process started first; then, on the clock, the
 * graph enqueued in one call with the system's own dependency feature, and
 * the wait until the store shows no job of it unfinished. Null (with the
 * reason) where the system cannot express the graph.
 */
export async function runWorkflow(system: BenchSystem, graph: WorkflowGraph, config: BenchConfig, tag: string): Promise<WorkflowResult | string> {
  const instance = await system.open(tag);
  let worker: WorkerProcess | null = null;
  try {
    if (!instance.enqueueGraph) return `${system.name} has no job dependencies`;
    const unsupported = (await instance.prepareGraph?.(graph)) ?? null;
    if (unsupported) return unsupported;
    worker = await WorkerProcess.spawn(system.name, "workflow", instance.target);
    await worker.start();
    const total = graph.dependsOn.length;
    const started = now();
    const deadline = started + config.workflowCapMs;
    await instance.enqueueGraph(graph);
    const enqueued = now();
    let capped = false;
    try {
      await untilNoneLeft(instance, deadline);
    } catch (error) {
      if (!(error instanceof DeadlineError)) throw error;
      capped = true;
    }
    const finishedAt = now();
    const finished = capped ? total - (await instance.unfinished()) : total;
    await worker.stop();
    worker = null;
    const serverMs = (await instance.dependencyServerMs?.()) ?? null;
    const seconds = (finishedAt - started) / 1000;
    return {
      seconds,
      enqueueSeconds: (enqueued - started) / 1000,
      usPerEdge: (seconds * 1e6) / graph.edges,
      serverUsPerEdge: serverMs === null ? null : (serverMs * 1000) / graph.edges,
      finished,
      capped,
    };
  } finally {
    worker?.kill();
    await instance.close();
  }
}

async function untilNoneLeft(instance: SystemInstance, deadline: number): Promise<void> {
  while ((await instance.unfinished()) > 0) {
    if (now() >= deadline) throw new DeadlineError("jobs left at the deadline");
    await sleep(10);
  }
}
