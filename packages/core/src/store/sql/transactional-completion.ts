import { STATE } from "./status-sets.js";
import { SUCCEEDED_WRITES } from "./attempt-fragments.js";
import { moveLiveJobs } from "./job-moves.js";

// Transactional completion (ctx.transaction): the handler's own writes and
// the job's completion commit in one transaction, on one connection.
//
// Lock order: the job row is locked at the END of the transaction, by this
// fenced UPDATE, not by a SELECT … FOR UPDATE when it begins. Held from the
// start, the row lock would last as long as the handler's callback, and the
// worker's lease renewal, which passes over rows another transaction holds,
// would leave this job's lease unrenewed all that time. Taken at the end it
// is held for one statement and the COMMIT. It cannot deadlock with the
// renewal (which never waits) or a completion batch: this transaction takes
// no other job row lock after it, and they never wait on the handler's own
// rows. The reclaim sweep uses
// SKIP LOCKED: while this transaction holds the row, the sweep passes it by;
// if the sweep locked it first, this UPDATE waits, re-reads the row (now
// without our execution id) and matches nothing, so the caller rolls back.
//
// The fence is the execution id alone, not the lease time: a lease that
// expired unnoticed leaves the job ours until someone reclaims it, and
// reclaiming needs the row lock this statement holds until COMMIT.

/**
 * Mark one attempt succeeded inside the caller's transaction, as
 * jobComplete does (attempts.ts); no row when fenced (the job was
 * reclaimed or finished elsewhere).
 * $1 job id, $2 execution id, $3 result (json text|null), $4 kept boolean
 */
export const jobCompleteInTransaction = `
WITH finished AS (SELECT $1::uuid AS id, $2::uuid AS execution_id, $4::boolean AS keep)${moveLiveJobs(
  {
    name: "done",
    from: "finished",
    alias: "finished",
    where: `j.id = finished.id AND j.current_execution_id = finished.execution_id AND j.status = ${STATE.running}`,
    keep: "finished.keep",
  },
  SUCCEEDED_WRITES("$3::jsonb"),
)}
SELECT id FROM done_moved`;
