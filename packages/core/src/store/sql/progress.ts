import { STATE } from "./status-sets.js";

// Progress a handler reports while it runs (ctx.progress). Fenced like every
// write about a running job: a worker that lost its lease matches no row.
// One row, one lock, held for one statement: it can wait briefly behind a
// lease renewal or a completion batch holding the row, but never holds a
// lock they wait for, so it cannot take part in a deadlock.

/**
 * Store the latest progress of a running attempt; no row when fenced.
 * $1 job id, $2 execution id, $3 progress (json text)
 */
export const jobProgressUpdate = `
UPDATE {{schema}}.jobs SET progress = $3::jsonb, progress_updated_at = now()
WHERE id = $1 AND current_execution_id = $2 AND status = ${STATE.running}
RETURNING id`;
