// The API's JSON shapes, named for the dashboard. Each one is read from the
// types that scripts/openapi-types.mjs generates from the OpenAPI document
// (api-types.ts, written by `npm run build`), so when a response schema
// changes, the dashboard's type-check breaks instead of drifting from it.
import type { paths } from "./api-types.js";
export { BULK_ACTION_STATES, BULK_ACTIONS, JOB_STATUSES } from "conveyor-jobs/browser";

/** The JSON body of an operation's 200 response (an error here: the operation has none). */
type Ok<Operation extends { responses: { 200: { content: { "application/json": unknown } } } }> =
  Operation["responses"][200]["content"]["application/json"];

/** The JSON body of an operation's 202 response. */
type Accepted<Operation extends { responses: { 202: { content: { "application/json": unknown } } } }> =
  Operation["responses"][202]["content"]["application/json"];

/** The JSON request body of an operation. */
type Body<Operation extends { requestBody: { content: { "application/json": unknown } } }> =
  Operation["requestBody"]["content"]["application/json"];

/** `GET /v1/jobs`: a page of jobs. */
export type JobPage = Ok<paths["/v1/jobs"]["get"]>;
export type JobJson = JobPage["items"][number];
export type JobStatus = JobJson["status"];
export type ErrorJson = NonNullable<JobJson["lastError"]>;

/** `GET /v1/jobs/count`: how many jobs a search matches, exact or estimated. */
export type JobCount = Ok<paths["/v1/jobs/count"]["get"]>;
/** The search fields of `GET /v1/jobs` and `GET /v1/jobs/count`, as query-string text. */
export type JobSearchQuery = NonNullable<paths["/v1/jobs/count"]["get"]["parameters"]["query"]>;

/** `GET /v1/jobs/{id}`: a job with its executions, one per attempt, and its requeues. */
export type JobWithExecutions = Ok<paths["/v1/jobs/{id}"]["get"]>;
export type ExecutionJson = JobWithExecutions["executions"][number];
/** A requeue, bulk retry, resume or rerun from a step that ran the job again. */
export type RequeueJson = JobWithExecutions["requeues"][number];

/** `GET /v1/jobs/{id}/steps`: a durable job's steps, sleeps and waits, in the order it first recorded them. */
export type StepList = Ok<paths["/v1/jobs/{id}/steps"]["get"]>;
export type StepJson = StepList["items"][number];

/** `GET /v1/dead-letters`: a page of dead letters. */
export type DeadLetterPage = Ok<paths["/v1/dead-letters"]["get"]>;
/** `GET /v1/dead-letters/{id}`. */
export type DeadLetterJson = Ok<paths["/v1/dead-letters/{id}"]["get"]>;

/** `GET /v1/queues`. */
export type QueueList = Ok<paths["/v1/queues"]["get"]>;
export type QueueStatsJson = QueueList["items"][number];

/** `GET /v1/key-limits` (admin keys only): every queue's key limits. */
export type KeyLimitList = Ok<paths["/v1/key-limits"]["get"]>;
export type KeyLimitJson = KeyLimitList["items"][number];
/** `GET /v1/queues/{name}/keys`: the keys with the most jobs waiting. */
export type TopKeys = Ok<paths["/v1/queues/{name}/keys"]["get"]>;
export type KeyLoadJson = TopKeys["items"][number];
/** `GET /v1/queues/{name}/keys/{key}`: what one key is doing and why its jobs wait. */
export type KeyStatusJson = Ok<paths["/v1/queues/{name}/keys/{key}"]["get"]>;

/** `GET /v1/overview`: the at-a-glance view, each part read under the search time bound. */
export type OverviewJson = Ok<paths["/v1/overview"]["get"]>;
export type OverviewQueueJson = OverviewJson["queues"][number];
export type RecentOutcomesJson = NonNullable<OverviewQueueJson["recent"]>;
export type OverviewKindJson = OverviewJson["kinds"][number];
export type OldestReadyJobJson = NonNullable<OverviewJson["oldestReadyJob"]>;
export type StuckJson = NonNullable<OverviewJson["stuck"]>;
export type StuckJobJson = StuckJson["jobs"][number];
export type ErrorGroupJson = OverviewJson["topErrors"][number];
export type OverviewWorkerJson = OverviewJson["workers"][number];
/** A part of the overview left out because it did not finish in time. */
export type OverviewPart = OverviewJson["incomplete"][number];

/** `POST /v1/bulk-actions`: what to do to which jobs. */
export type BulkActionRequest = Body<paths["/v1/bulk-actions"]["post"]>;
export type BulkActionFilterJson = BulkActionRequest["filter"];
/** `GET /v1/bulk-actions/{id}`: an operation, the record of who did what and how far it got. */
export type BulkActionJson = Ok<paths["/v1/bulk-actions/{id}"]["get"]>;
export type BulkActionKind = BulkActionJson["action"];
/** `POST /v1/bulk-actions` answers 202 with the operation, running. */
export type BulkActionStarted = Accepted<paths["/v1/bulk-actions"]["post"]>;
/** `GET /v1/bulk-actions`: a page of operations, newest first. */
export type BulkActionPage = Ok<paths["/v1/bulk-actions"]["get"]>;

/** `GET /v1/me`: the signed-in key's id, tenant and whether it is an admin key. */
export type CurrentKey = Ok<paths["/v1/me"]["get"]>;

/** `GET /v1/workers`. */
export type WorkerList = Ok<paths["/v1/workers"]["get"]>;
export type WorkerJson = WorkerList["items"][number];

/** `GET /v1/stats/throughput` (hidden from the OpenAPI document; typed from its route schema). */
export type Throughput = Ok<paths["/v1/stats/throughput"]["get"]>;
export type ThroughputMinuteJson = Throughput["minutes"][number];

/** `GET /v1/flows`: a page of flows and batches. */
export type FlowPage = Ok<paths["/v1/flows"]["get"]>;
export type FlowJson = FlowPage["items"][number];
/** `GET /v1/flows/{id}`: a flow with its jobs, what each waits for, and counts by status. */
export type FlowDetail = Ok<paths["/v1/flows/{id}"]["get"]>;
export type FlowNodeJson = FlowDetail["jobs"][number];
/** `GET /v1/jobs/{id}/dependencies`: a job's parents, children and flow. */
export type JobDependencies = Ok<paths["/v1/jobs/{id}/dependencies"]["get"]>;
export type DependencyLinkJson = JobDependencies["dependencies"][number];
