/**
 * The `conveyor-jobs/browser` entry: the constants and pure functions the
 * dashboard of conveyor-jobs-http shares with the API. A second entry
 * beside `conveyor-jobs/server` because the dashboard is bundled for the
 * browser: the modules here import nothing at run time, where the server
 * entry loads the client, the store, zod, `pg` and `node:crypto`. Like the
 * server entry, it follows the core's version and is not in the API reference.
 *
 * @module
 */

// The states the dashboard counts jobs by, and the bulk actions with the states each applies to.
export { JOB_STATUSES } from "./core/states.js";
export { BULK_ACTION_STATES, BULK_ACTIONS } from "./core/bulk-actions.js";

// The state machine, from which the dashboard reads the states a job resumes or reruns from.
export { TRANSITIONS } from "./core/transitions.js";

// The step records' state machine, from which the dashboard reads what a record's state means.
export { RECORD_TRANSITIONS } from "./core/step-transitions.js";

// The longest error text the dashboard's search box sends.
export { MAX_ERROR_SEARCH_LENGTH } from "./core/defaults.js";

// The levels the dashboard draws a flow's graph by, the same as the CLI's.
export { flowLevels } from "./wire/flow-levels.js";
