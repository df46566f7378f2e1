import type { StoredError } from "../core/model.js";
import type { SentEvent, StepRecord } from "../core/steps.js";
import { errorJson, isoOrNull } from "./serialize.js";
import type { SentEventJson, StepJson } from "./step-shapes.js";

// Durable execution as JSON, each shape defined once: a zod schema
// (step-shapes.ts) and the mapping from the library's type here, which the
// CLI's `--json` prints. The same conventions as serialize.ts (camelCase,
// ISO times, errors without stacks).

export type { SentEventJson, StepJson } from "./step-shapes.js";

/** A step record as JSON. */
export function stepJson(record: StepRecord): StepJson {
  return {
    name: record.name,
    seq: record.seq,
    kind: record.kind,
    state: record.state,
    result: record.result ?? null,
    error: errorJson((record.error as StoredError | null) ?? null),
    attempt: record.attempt,
    executionId: record.executionId,
    startedAt: isoOrNull(record.startedAt),
    finishedAt: isoOrNull(record.finishedAt),
    wakeAt: isoOrNull(record.wakeAt),
    event: record.event,
    eventKey: record.eventKey,
    eventId: record.eventId,
  };
}

/** A sent event as JSON. */
export function sentEventJson(sent: SentEvent): SentEventJson {
  return { id: sent.id, jobIds: [...sent.jobIds] };
}
