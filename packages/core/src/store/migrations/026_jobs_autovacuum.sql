-- Autovacuum on the jobs table by dead rows, not by the table's size. A job
-- leaves two dead versions (its claim and its end), and finished jobs stay
-- in the table until retention removes them, so the default trigger (20% of
-- the rows dead) waits longer the more history is kept: with a million
-- finished jobs it waits for 200,000 dead versions, and the ready indexes
-- and the table grow meanwhile. Vacuuming once 10,000 rows are dead, at full
-- speed, keeps the ready index at half the size and the table smaller
-- (docs/performance.md, "Autovacuum on the jobs table"). ANALYZE runs once 1%
-- of the rows changed, not 10%, so that the planner's estimates (the counts
-- past their exact bound) follow the states' sizes. Setting storage
-- parameters takes only a SHARE UPDATE EXCLUSIVE lock: reads, claims and
-- writes go on meanwhile.
ALTER TABLE {{schema}}.jobs SET (
  autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 10000,
  autovacuum_vacuum_cost_delay = 0,
  autovacuum_analyze_scale_factor = 0.01
);
