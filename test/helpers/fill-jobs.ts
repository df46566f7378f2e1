/**
 * A store shaped like a busy one, made in one INSERT … SELECT: jobs spread
 * over the hours before now (UUIDv7 ids made from their created_at, as the
 * client makes them), most finished, some in every other state, and one
 * finished attempt per finished job in job_executions. Each row satisfies
 * every CHECK of the jobs table.
 *
 * With `jobs` rows, job number g (1-based) is:
 * - queue `q<g % 20>`, kind `k<g % 50>`, tenant `t<g % 10>`;
 * - payload `{ "customerId": g % 5000, "plan": "free" | "pro" }`;
 * - by g % 1000: 0-849 succeeded, 850-869 cancelled, 870-879 dead,
 *   880-959 queued, 960-979 retrying, 980-989 waiting, 990 running with
 *   an expired lease, 991-999 succeeded; failed ones carry
 *   `last_error.message` "upstream <g % 7> failed";
 * - created `spanMs` * (jobs - g) / jobs before now, so the newest is last.
 */
export function fillJobsSql(jobs: number, spanMs: number): string {
  return `
WITH numbered AS (
  SELECT g, now() - (${spanMs}::float8 * (${jobs} - g) / ${jobs}) * interval '1 millisecond' AS created,
         CASE
           WHEN g % 1000 < 850 THEN 'succeeded'
           WHEN g % 1000 < 870 THEN 'cancelled'
           WHEN g % 1000 < 880 THEN 'dead'
           WHEN g % 1000 < 960 THEN 'queued'
           WHEN g % 1000 < 980 THEN 'retrying'
           WHEN g % 1000 < 990 THEN 'waiting'
           WHEN g % 1000 = 990 THEN 'running'
           ELSE 'succeeded'
         END AS status
  FROM generate_series(1, ${jobs}) AS g
), filled AS (
  INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, run_at,
                               locked_by, current_execution_id, lease_expires_at, last_error,
                               created_at, updated_at, started_at, finished_at)
  SELECT (lpad(to_hex((extract(epoch FROM created) * 1000)::bigint), 12, '0')
          || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid,
         't' || (g % 10), 'q' || (g % 20), 'k' || (g % 50),
         jsonb_build_object('customerId', g % 5000, 'plan', CASE WHEN g % 3 = 0 THEN 'pro' ELSE 'free' END),
         status,
         CASE WHEN status IN ('queued', 'waiting') THEN 0 ELSE 1 END, 5, created,
         CASE WHEN status = 'running' THEN 'filler-worker' END,
         CASE WHEN status = 'running' THEN gen_random_uuid() END,
         CASE WHEN status = 'running' THEN now() - interval '1 minute' END,
         CASE WHEN status IN ('dead', 'retrying') THEN jsonb_build_object('name', 'Error', 'message', 'upstream ' || (g % 7) || ' failed') END,
         created, created,
         CASE WHEN status IN ('queued', 'waiting') THEN NULL ELSE created END,
         CASE WHEN status IN ('succeeded', 'cancelled', 'dead') THEN created + interval '10 milliseconds' END
  FROM numbered
  RETURNING id, status, finished_at, last_error
)
INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome, error)
SELECT id, id, 1, 'filler-worker', finished_at - interval '10 milliseconds', finished_at,
       CASE status WHEN 'succeeded' THEN 'succeeded' WHEN 'cancelled' THEN 'cancelled' ELSE 'failed' END,
       last_error
FROM filled
WHERE finished_at IS NOT NULL`;
}
