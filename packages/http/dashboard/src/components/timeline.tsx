import { between, formatTime } from "../format.js";
import type { ExecutionJson } from "../types.js";
import { Badge, StoredError } from "./common.js";

/** Outcomes that give the attempt back (a suspension: a durable job's sleep or wait): the next attempt carries the same number. */
const UNCOUNTED = new Set(["retry_after", "interrupted", "suspended"]);

/** An attempt and the run it belongs to: run 1 until the job is first requeued from the dead-letter queue. */
export interface TimelineEntry {
  attempt: ExecutionJson;
  run: number;
  /** True for the first attempt after a requeue. */
  requeuedBefore: boolean;
}

/**
 * Number the runs of a job. A requeue from the dead-letter queue resets the
 * job's attempts, so the next attempt's number is not above the one before;
 * after an uncounted outcome the number repeats without any requeue, so only
 * a counted one followed by a number not above it marks a requeue.
 */
export function timelineEntries(attempts: readonly ExecutionJson[]): TimelineEntry[] {
  let run = 1;
  return attempts.map((attempt, index) => {
    const previous = attempts[index - 1];
    const requeuedBefore = previous !== undefined && !UNCOUNTED.has(previous.outcome) && attempt.attempt <= previous.attempt;
    if (requeuedBefore) run += 1;
    return { attempt, run, requeuedBefore };
  });
}

/** Every attempt, oldest first: who ran it, when, how it ended, and why; requeues between them are marked. */
export function Timeline({ attempts }: { attempts: ExecutionJson[] }) {
  if (attempts.length === 0) return <p class="muted">No attempts yet.</p>;
  const entries = timelineEntries(attempts);
  const runs = entries.at(-1)!.run;
  return (
    <ol class="timeline" data-testid="timeline">
      {entries.map(({ attempt, run, requeuedBefore }) => [
        requeuedBefore ? (
          <li key={`requeue-${attempt.id}`} class="requeue" data-testid="requeue">
            Requeued from the dead-letter queue: attempts start again (run {run})
          </li>
        ) : null,
        <li key={attempt.id} class={`attempt attempt-${attempt.outcome.replace(/[^a-z_]/g, "")}`} data-testid="attempt">
          <div class="attempt-head">
            <span class="attempt-number">
              {runs > 1 ? `Run ${run}, attempt ${attempt.attempt}` : `Attempt ${attempt.attempt}`}
            </span>
            <Badge value={attempt.outcome} />
            {UNCOUNTED.has(attempt.outcome) ? <span class="muted">not counted</span> : null}
            <span class="muted">{between(attempt.startedAt, attempt.finishedAt)}</span>
          </div>
          <div class="attempt-body">
            <span>
              worker <code>{attempt.workerId}</code>
            </span>
            <span>
              {formatTime(attempt.startedAt)} → {attempt.finishedAt ? formatTime(attempt.finishedAt) : "…"}
            </span>
            {attempt.batch ? (
              <span data-testid="attempt-batch">
                in batch <code title={attempt.batch.id}>{attempt.batch.id.slice(-12)}</code> of {attempt.batch.size}
              </span>
            ) : null}
            {attempt.error ? (
              <span>
                <StoredError error={attempt.error} />
              </span>
            ) : null}
          </div>
        </li>,
      ])}
    </ol>
  );
}
