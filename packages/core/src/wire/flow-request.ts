import { z } from "zod";
import { MAX_DEPENDENCIES, MAX_FLOW_JOBS, MAX_IDEMPOTENCY_KEY_LENGTH } from "../core/defaults.js";
import { type BatchCallbackWhen, BATCH_CALLBACK_WHENS, DEPENDENCY_POLICIES, type DependencyPolicy } from "../core/flows.js";
import { jobFields } from "./job-request.js";
import { requestObject } from "./request-object.js";

// Dependencies, flows and batches as JSON: the bodies of `POST /v1/flows`
// and `POST /v1/batches`, and `dependsOn` on `POST /v1/jobs`. As in
// job-request.ts, the rules the client enforces anyway are repeated so the
// OpenAPI document states them; the client stays the authority (cycles,
// unknown names, missing or foreign dependencies are its to refuse).

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const jobId = z.string().regex(UUID, "must be a job id (a UUID)");
const nodeName = z.string().min(1).max(255);
const policy = z.enum(DEPENDENCY_POLICIES as readonly DependencyPolicy[] as [DependencyPolicy, ...DependencyPolicy[]]);

/** The policy of each dependency that names none. */
const onDependencyFailure = policy
  .optional()
  .describe("when a dependency ends other than succeeded: fail (dead-letter this job), cancel, or run anyway; default fail");

/** `dependsOn` and `onDependencyFailure` of `POST /v1/jobs`: existing jobs of the same tenant. */
export const jobDependencyFields = {
  dependsOn: z
    .array(z.union([jobId, requestObject({ jobId, onFailure: policy.optional() })]))
    .min(1)
    .max(MAX_DEPENDENCIES)
    .optional()
    .describe("jobs (ids, same tenant) this one waits for: it is `waiting` until every one has ended; not with unique"),
  onDependencyFailure,
};

/** One job of a flow: a node of the graph, named by its key in `jobs`. */
export const flowJobItem = requestObject({
  kind: jobFields.kind,
  payload: jobFields.payload,
  queue: jobFields.queue,
  priority: jobFields.priority,
  runAt: jobFields.runAt,
  delayMs: jobFields.delayMs,
  maxAttempts: jobFields.maxAttempts,
  dependsOn: z
    .array(
      z.union([
        nodeName.describe("another job of this flow, by name"),
        requestObject({ node: nodeName, onFailure: policy.optional() }),
        requestObject({ jobId, onFailure: policy.optional() }),
      ]),
    )
    .max(MAX_DEPENDENCIES)
    .optional()
    .describe("what this job waits for: names of jobs in this flow, { node, onFailure? }, or existing jobs { jobId, onFailure? }"),
  onDependencyFailure,
});

const flowCommon = {
  name: z.string().min(1).max(255).optional().describe("a label for people"),
  idempotencyKey: z
    .string()
    .min(1)
    .max(MAX_IDEMPOTENCY_KEY_LENGTH)
    .optional()
    .describe("per tenant: the same key and request return the flow it first created (200); a different request: 409"),
  tenant: jobFields.tenant,
};

/** `POST /v1/flows`: jobs by name, each naming what it waits for. */
export const flowBody = requestObject({
  ...flowCommon,
  jobs: z
    .record(nodeName, flowJobItem)
    .refine((jobs) => Object.keys(jobs).length >= 1 && Object.keys(jobs).length <= MAX_FLOW_JOBS, `1 to ${MAX_FLOW_JOBS} jobs`)
    .describe("the jobs by name (1 to 255 characters each)"),
});

/** One member of a batch. */
export const batchMemberItem = flowJobItem.omit({ dependsOn: true, onDependencyFailure: true });

/** `POST /v1/batches`: members, and a callback released once every member has ended. */
export const batchFlowBody = requestObject({
  ...flowCommon,
  jobs: z.array(batchMemberItem).min(1).max(MAX_FLOW_JOBS - 1),
  callback: requestObject({
    ...batchMemberItem.shape,
    when: z
      .enum(BATCH_CALLBACK_WHENS as readonly BatchCallbackWhen[] as [BatchCallbackWhen, ...BatchCallbackWhen[]])
      .optional()
      .describe("always (default): once every member has ended; succeeded: only if all succeeded; failed: only if one did not"),
  }),
});

/** A parsed `POST /v1/flows` body. */
export type FlowBody = z.output<typeof flowBody>;
/** One parsed job of a flow. */
export type FlowJobItem = z.output<typeof flowJobItem>;
/** A parsed `POST /v1/batches` body. */
export type BatchFlowBody = z.output<typeof batchFlowBody>;
