import type { JobStatus } from "./states.js";

// What counts, queue statistics and the overview answer. A count is exact
// up to a limit and the planner's estimate beyond it, and says which: an
// estimate comes from table statistics, never from reading the rows, so it
// costs the same at ten jobs as at ten million.

/** How many jobs match a filter (`countJobs`). */
export interface JobCount {
  /** Exact when `estimated` is false; else the planner's estimate, never below what was counted. */
  count: number;
  /** True when more jobs matched than the exact-count limit, or counting did not finish within the search time bound. */
  estimated: boolean;
}

/** A number per job state. */
export type StatusCounts = Record<JobStatus, number>;

/** Per job state: whether its count is an estimate. */
export type StatusEstimated = Record<JobStatus, boolean>;

/** One queue's jobs by state, and how long its oldest ready job has waited. */
export interface QueueStats {
  /** The queue's name. */
  queue: string;
  /** Jobs by state: exact up to the per-queue limit, estimated beyond it (and always for succeeded and cancelled). */
  counts: StatusCounts;
  /** Which of `counts` are estimates. */
  estimated: StatusEstimated;
  /** Milliseconds since the oldest job ready to run became ready; null when none is waiting. */
  oldestReadyAgeMs: number | null;
}

/** Attempts that ended in a recent window, and their failure rate. */
export interface RecentOutcomes {
  /** Attempts that succeeded. */
  succeeded: number;
  /** Attempts that failed, timed out or lost their lease. */
  failed: number;
  /** failed / (succeeded + failed); null when neither happened. */
  failureRate: number | null;
}

/** One queue in the overview. */
export interface OverviewQueue extends QueueStats {
  /** Paused queues are not claimed. */
  paused: boolean;
  /** Attempts of its jobs that ended in the window; null when the window could not be read within the time bound. */
  recent: RecentOutcomes | null;
  /** Its ready job that has waited longest (`oldestReadyAgeMs` is its age); null when none waits, or the overview's `incomplete` lists oldestReady. */
  oldestReadyJob: OldestReadyJob | null;
}

/** A job, named by what an operator reads first. */
export interface OverviewJob {
  /** The job's id. */
  id: string;
  /** The queue it is in. */
  queue: string;
  /** Its kind. */
  kind: string;
  /** The tenant it belongs to. */
  tenant: string;
}

/** The job that has waited longest to start. */
export interface OldestReadyJob extends OverviewJob {
  /** Milliseconds since it became ready (its run time). */
  ageMs: number;
}

/** A running job whose lease ran out: its worker stopped renewing it (crashed, paused, cut off). */
export interface StuckJob extends OverviewJob {
  /** The worker that held it. */
  workerId: string;
  /** Milliseconds since its lease expired. */
  expiredMs: number;
}

/** Failed attempts in the window with one error message. */
export interface ErrorGroup {
  /** The error's message, as stored. */
  message: string;
  /** Attempts that ended with it. */
  count: number;
  /** The kinds whose attempts ended with it, sorted. */
  kinds: string[];
  /** When the last of them ended. */
  lastSeenAt: Date;
}

/** A live worker and how busy it is. */
export interface WorkerLoad {
  /** The worker's id, as in `locked_by` and the `workers` table. */
  id: string;
  /** The host it runs on. */
  hostname: string;
  /** Its process id on that host. */
  pid: number;
  /** Queues it serves; null means all. */
  queues: string[] | null;
  /** Jobs it runs at once at most. */
  concurrency: number;
  /** Jobs it is running now (in a tenant's overview, that tenant's only). */
  running: number;
  /** When it last reported in. */
  lastSeenAt: Date;
}

/** Which parts of an overview did not finish within the search time bound, and so are left out. */
export type OverviewPart = "oldestReady" | "recent" | "stuck";

/**
 * Everything an operator reads first, for all tenants or one, answered from
 * indexes and statistics without reading the jobs table through.
 */
export interface Overview {
  /** When it was read (database clock). */
  at: Date;
  /** The tenant it covers; null for all. */
  tenant: string | null;
  /** Jobs of one queue in one state counted one by one at most; beyond, estimated. */
  exactCountLimit: number;
  /** The recent window of `recent`, `kinds` and `topErrors`, in ms. */
  windowMs: number;
  /** Every queue with jobs (or settings, for all tenants), by name. */
  queues: OverviewQueue[];
  /** Per job kind: attempts that ended in the window; empty when the window could not be read. */
  kinds: Array<
    RecentOutcomes & {
      /** The job kind these outcomes are of. */
      kind: string;
    }
  >;
  /** The ready job that has waited longest; null when none waits (or `incomplete` lists oldestReady). */
  oldestReadyJob: OldestReadyJob | null;
  /**
   * Running jobs past their lease, the longest expired first (at most 5);
   * `count` is exact up to `exactCountLimit`, and when there are more it is
   * that limit with `estimated` true. Null when `incomplete` lists stuck.
   */
  stuck: {
    /** Running jobs past their lease. */
    count: number;
    /** True when `count` is the exact-count limit and there are more. */
    estimated: boolean;
    /** The longest expired of them. */
    jobs: StuckJob[];
  } | null;
  /** The most frequent error messages of failed attempts in the window, at most 10. */
  topErrors: ErrorGroup[];
  /** Live workers with their load. */
  workers: WorkerLoad[];
  /** Parts left out because they did not finish within the search time bound. */
  incomplete: OverviewPart[];
}
