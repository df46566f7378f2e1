import { jobAttempts } from "./job-attempts.js";
import { jobClaimByKey } from "./job-claim-by-key.js";
import { jobClaimFair } from "./job-claim-fair.js";
import { jobClaimFromLimitedQueue } from "./job-claim-from-limited-queue.js";
import { jobDependentsCheck } from "./job-dependents-check.js";
import { jobDependentsRelease } from "./job-dependents-release.js";
import { jobDependentsSettle } from "./job-dependents-settle.js";
import { jobLimitKeysReady } from "./job-limit-keys-ready.js";
import { jobHistoryBound } from "./job-history-bound.js";
import { jobHistoryDetach } from "./job-history-detach.js";
import { jobHistoryDrop } from "./job-history-drop.js";
import { jobHistoryExtend } from "./job-history-extend.js";
import { jobHistorySpan } from "./job-history-span.js";
import { jobsDeleted } from "./jobs-deleted.js";
import { jobsForget } from "./jobs-forget.js";
import { jobsEnded } from "./jobs-ended.js";
import { jobEndsRelease } from "./job-ends-release.js";
import { jobsStatusChanged } from "./jobs-status-changed.js";
import { jobsEstimate } from "./jobs-estimate.js";
import { jobsNotifyReady } from "./jobs-notify-ready.js";
import { uuidV7 } from "./uuid-v7.js";
import type { Routine } from "./routine.js";

export { routineHash, type Routine } from "./routine.js";

/**
 * Every SQL function and trigger of the schema, in the order `migrate`
 * installs them. SQL-language functions are checked against the schema when
 * created, so each comes after the functions and tables it reads; PL/pgSQL
 * bodies are resolved when they run.
 */
export const ROUTINES: readonly Routine[] = [
  uuidV7,
  jobAttempts,
  jobsNotifyReady,
  jobsEnded,
  jobsStatusChanged,
  jobsForget,
  jobsDeleted,
  jobHistorySpan,
  jobHistoryBound,
  jobHistoryExtend,
  jobHistoryDetach,
  jobHistoryDrop,
  jobDependentsSettle,
  jobDependentsRelease,
  jobDependentsCheck,
  jobEndsRelease,
  jobsEstimate,
  jobLimitKeysReady,
  jobClaimFromLimitedQueue,
  jobClaimFair,
  jobClaimByKey,
];
