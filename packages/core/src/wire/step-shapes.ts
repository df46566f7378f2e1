import { z } from "zod";
import { errorShape, optionalTime, storedTime } from "./job-shapes.js";

// The zod schemas of durable execution as JSON, and their JSON types; the
// mappings are in step-json.ts, which loads without zod for the CLI.

/** A job's record of one step, sleep or wait. */
export const stepShape = z.object({
  name: z.string().describe("the name the handler gave it, unique within the job"),
  seq: z.number().int().describe("1 for the job's first record, then 2, …: the order in which they were first made"),
  kind: z.enum(["step", "sleep", "wait"]),
  state: z
    .enum(["completed", "failed", "sleeping", "waiting", "received", "timed_out"])
    .describe("step: completed or failed (its last error; a later run's record replaces it); sleep: sleeping or completed; wait: waiting, received or timed_out"),
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
