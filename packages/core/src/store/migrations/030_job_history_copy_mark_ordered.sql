-- The function of the history copy's marking trigger, which the copy ahead
-- of migration 028 installs (store/sql/history-copy.ts) and 028's drop of
-- the trigger leaves behind.
DROP FUNCTION IF EXISTS {{schema}}.job_history_copy_mark_ordered();
