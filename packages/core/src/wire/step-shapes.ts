import { z } from "zod";
import { RECORD_KINDS, RECORD_STATES } from "../core/step-transitions.js";
import { STEP_STATES } from "../core/steps.js";
import { errorShape, optionalTime, storedTime } from "./job-shapes.js";

// The zod schemas of durable execution as JSON, and their JSON types; the
// mappings are in step-json.ts, which loads without zod for the CLI.

/** A job's record of one step, sleep or wait. */
export const stepShape = z.object({
  name: z.string().describe("the name the handler gave it, unique within the job"),
  seq: z.number().int().describe("1 for the job's first record, then 2, …: the order in which they were first made"),
  kind: z.enum(RECORD_KINDS as [(typeof RECORD_KINDS)[number], ...(typeof RECORD_KINDS)[number][]]),
  state: z
    .enum(STEP_STATES)
    .describe(
      `the record's state, of its kind's: ${RECORD_KINDS.map((kind) => `${kind}: ${RECORD_STATES[kind].join(", ")}`).join("; ")}. ` +
        "A failed step keeps its last error until a later run's record replaces it. No record state is a job state: the job of an asleep sleep or an awaiting wait is sleeping",
    ),
  result: z.unknown().describe("a completed step's result, or the payload of the event a wait received; else null"),
  error: errorShape.nullable().describe("a failed step's last error"),
  attempt: z.number().int().describe("the attempt that made the record"),
  executionId: z.uuid().describe("that attempt's execution (the job's executions list it)"),
  startedAt: storedTime,
  finishedAt: optionalTime.describe("null while a sleep sleeps or a wait waits"),
  wakeAt: optionalTime.describe("a sleep's wake time or a wait's deadline; null for a step, and for a wait without a deadline"),
  event: z.string().nullable().describe("a wait's event name; null for steps and sleeps"),
  eventKey: z.string().nullable().describe('a wait\'s event key ("": events sent without a key); null for steps and sleeps'),
  eventId: z.uuid().nullable().describe("the id of the event a wait received"),
});

/** What sending an event did. */
export const sentEventShape = z.object({
  id: z.uuid().describe("the stored event's id"),
  jobIds: z.array(z.uuid()).describe("the jobs it woke: each had a wait that received it and is queued again"),
});

/** A step record, as JSON. */
export type StepJson = z.output<typeof stepShape>;
/** A sent event, as JSON. */
export type SentEventJson = z.output<typeof sentEventShape>;
