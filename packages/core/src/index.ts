/**
 * Conveyor: background jobs for TypeScript on PostgreSQL.
 *
 * Glossary: a *job kind* is defined once with `defineJob`; a *job* is one
 * enqueued unit of work of a kind; an *attempt* (execution) is one run of a
 * job by a worker, owned under a *lease* that heartbeats renew; *fencing*
 * means every write about a running job names its execution id, so a worker
 * that lost the lease writes nothing; the *dead-letter queue* keeps jobs
 * that will not succeed, with their history.
 */
export { Conveyor } from "./conveyor.js";
export type {
  CancelOutcome,
  ConveyorClient,
  EnqueueManyItem,
  ListBulkActionsFilter,
  ListDeadLettersFilter,
  ListJobsFilter,
  TenantScope,
  WaitForDatabaseOptions,
} from "./client/conveyor-client.js";
export type { JobFilter } from "./core/job-filter.js";
export type {
  ErrorGroup,
  JobCount,
  OldestReadyJob,
  Overview,
  OverviewJob,
  OverviewPart,
  OverviewQueue,
  QueueStats,
  RecentOutcomes,
  StatusCounts,
  StatusEstimated,
  StuckJob,
  WorkerLoad,
} from "./core/overview.js";
export { BULK_ACTION_STATES, BULK_ACTION_STATUSES, BULK_ACTIONS } from "./core/bulk-actions.js";
export type { BulkAction, BulkActionFilter, BulkActionInput, BulkActionKind, BulkActionStatus } from "./core/bulk-actions.js";
export type { BulkActionTuning, RunBulkActionOptions } from "./client/bulk-action-runner.js";
export type { BulkActions } from "./client/bulk-actions.js";
export type { DeadLetters } from "./client/dead-letters.js";
export type { Flows, ListFlowsFilter } from "./client/flows.js";
export type { KeyLimitsControl } from "./client/key-limits.js";
export type { Queues } from "./client/queues.js";
export type { QueueOverview, QueueOverviewItem } from "./client/queue-overview.js";
export type { Throughput, ThroughputFilter, ThroughputMinute } from "./client/throughput.js";
export type { WaitForOptions } from "./client/wait-for.js";
export { defineJob } from "./core/define-job.js";
export type {
  AnyJobDefinition,
  JobContext,
  JobDefinition,
  JobDefinitionInput,
  JobHandler,
  JobInfo,
  PayloadInput,
  PayloadOutput,
  ResultOf,
} from "./core/define-job.js";
export { flowJob } from "./client/enqueue-flow.js";
export type {
  BatchInput,
  BatchMember,
  EnqueuedBatch,
  EnqueuedFlow,
  FlowDependency,
  FlowInput,
  FlowJob,
  FlowJobOptions,
  FlowJobs,
  PayloadFor,
} from "./client/enqueue-flow.js";
export { BATCH_CALLBACK_WHENS, DEPENDENCY_POLICIES } from "./core/flows.js";
export type {
  BatchCallbackWhen,
  DependencyLink,
  DependencyOutcome,
  DependencyPolicy,
  DependencySummary,
  FlowCancelResult,
  FlowDetail,
  FlowInfo,
  FlowMember,
  FlowSummary,
  JobDependencies,
  JobDependency,
} from "./core/flows.js";
export type { EnqueueOptions } from "./client/enqueue.js";
export type { EnqueuedJob } from "./client/enqueued-job.js";
export type { CronMissed, CronOption, CronSchedule, ResolvedCronSchedule } from "./core/schedules.js";
export type { CronMissedPolicy, CronScheduleInfo } from "./core/cron.js";
export type { ConveyorOptions, ResolvedConveyorOptions, TracingOptions } from "./client/options.js";
export type { TraceContext } from "./core/trace-context.js";
export type { KindRetention, PruneOptions, PruneResult, ResolvedKindRetention } from "./core/retention.js";
export type { BackoffPolicy, ResolvedBackoff } from "./core/backoff.js";
export { retryDelayMs, resolveBackoff } from "./core/backoff.js";
/** The defaults and limits of every option a user sets (internal tuning constants are not exported). */
export * as defaults from "./core/public-defaults.js";
export {
  ConfigError,
  ConflictError,
  ConveyorError,
  DatabaseError,
  DatabaseReadOnlyError,
  EmbeddedPostgresError,
  FlowIdempotencyConflictError,
  IdempotencyConflictError,
  NotFoundError,
  PermanentError,
  StepError,
  JobSuspendedError,
  RetryAfter,
  retryAfter,
  SchemaTooNewError,
  SchemaTooOldError,
  SchemaMismatchError,
  SearchTimeoutError,
  WaitAbortedError,
  WaitTimeoutError,
  UniqueJobConflictError,
  ValidationError,
} from "./core/errors.js";
export type { ConveyorErrorCode, ValidationIssue } from "./core/errors.js";
export type { JobRequestField, JobRequestFields } from "./core/idempotency.js";
export { formatDuration, parseDuration } from "./core/duration.js";
export { uuidv7 } from "./core/ids.js";
export type { Fairness, QueueLimitsInput, QueueSettings, RateLimit, TenantSettings } from "./core/queue-settings.js";
export type { KeyHeldBack, KeyLimits, KeyLimitSettings, KeyLimitSource, KeyLimitsInput, KeyLoad, KeyState, KeyStatus } from "./core/key-limits.js";
export type { DeadLetter, Job, JobExecution, JobRequeue, JobWithExecutions, Page, StoredError, WorkerInfo } from "./core/model.js";
export { REQUEUE_ACTIONS } from "./core/requeues.js";
export type { RequeueAction } from "./core/requeues.js";
export { EXECUTION_OUTCOMES, JOB_STATUSES, TERMINAL_STATUSES } from "./core/states.js";
export type { ExecutionOutcome, JobStatus } from "./core/states.js";
export { UNIQUE_CONFLICT_MODES, UNIQUE_STATES } from "./core/unique.js";
export type { UniqueConflictMode, UniqueOptions, UniqueOutcome, UniqueState } from "./core/unique.js";
export type { Queryable } from "./core/queryable.js";
export type {
  DurableFunctions,
  SendEventInput,
  SentEvent,
  StepOptions,
  StepRecord,
  TransactionalStepOptions,
  WaitForEventOptions,
} from "./core/steps.js";
export type { Steps } from "./client/steps.js";
export type { BatchContext, BatchHandler, BatchJob, BatchOptions, BatchOutcome } from "./core/batch.js";
export type { MigrationResult, SchemaStatus } from "./store/migrate.js";
export { JobCancelledError, JobTimeoutError, LeaseLostError, WorkerShutdownError } from "./worker/abort-reasons.js";
export { Worker } from "./worker/worker.js";
export type { WorkerOptions } from "./worker/worker.js";
export type { ResolvedWorkerOptions } from "./worker/options.js";
export type { WorkerMetrics } from "./metrics/worker-metrics.js";
export { createWorkerMetrics } from "./metrics/prometheus-metrics.js";
export type { WorkerMetricsOptions } from "./metrics/prometheus-metrics.js";
export type { MetricCounter, MetricGauge, MetricHistogram, MetricLabels, MetricReading, MetricSample, MetricsRegistry } from "./metrics/metric-types.js";
export type { ResolvedRetentionOptions, RetentionOptions } from "./worker/retention-options.js";
