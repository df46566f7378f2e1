/** States in which a job may hold its unique key. */
export const UNIQUE_STATES = ["queued", "retrying", "running"] as const;
/** A state in which a job may hold its unique key: "queued", "retrying" or "running". */
export type UniqueState = (typeof UNIQUE_STATES)[number];

/** What an enqueue does when another job holds its unique key. */
export const UNIQUE_CONFLICT_MODES = ["keep", "replace", "drop"] as const;
/** "keep", "replace" or "drop"; see `UniqueOptions.onConflict`. */
export type UniqueConflictMode = (typeof UNIQUE_CONFLICT_MODES)[number];

/**
 * The `unique` enqueue option: at most one job per key (per tenant) among the
 * jobs in `states`. The database enforces it (a partial unique index), so
 * concurrent enqueues from any number of processes cannot make two.
 */
export interface UniqueOptions {
  /** 1..`MAX_UNIQUE_KEY_LENGTH` (255) characters. Shared by every kind of the tenant: put the kind in it if kinds must not collide. */
  key: string;
  /**
   * States in which the job holds the key; must include "queued" (every job
   * starts there). The key is released for good when the job leaves them.
   * @defaultValue `DEFAULT_UNIQUE_STATES` (["queued", "retrying", "running"])
   */
  states?: readonly UniqueState[];
  /**
   * When another job holds the key: "keep" returns that job unchanged;
   * "replace" (debounce) gives it this payload and run time (and priority,
   * when given) if it is still waiting, else keeps it; "drop" throws
   * `UniqueJobConflictError`.
   * @defaultValue `DEFAULT_UNIQUE_ON_CONFLICT` ("keep")
   */
  onConflict?: UniqueConflictMode;
}

/**
 * What the unique key did to an enqueue: "created" a new job that holds the
 * key, "kept" the job holding it unchanged, or "replaced" that job's payload
 * and run time.
 */
export type UniqueOutcome = "created" | "kept" | "replaced";

