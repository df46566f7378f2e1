import { between, formatTime } from "../format.js";
import { href } from "../router.js";
import type { ExecutionJson, RequeueJson } from "../types.js";
import { Badge, StoredError } from "./common.js";

/** Outcomes that give the attempt back (a suspension: a durable job's sleep or wait): the next attempt carries the same number. */
const UNCOUNTED = new Set(["retry_after", "interrupted", "suspended"]);

/** One line of the timeline: an attempt, or a requeue that starts the next run. */
export type TimelineEntry =
  | { kind: "attempt"; attempt: ExecutionJson; run: number }
  /** `requeue` null: attempts started again with nothing recorded (a dead letter's history, or a job requeued by an older Conveyor). */
  | { kind: "requeue"; requeue: RequeueJson | null; run: number };

/** Milliseconds of an ISO time; null when there is none. */
const timeOf = (iso: string | null) => (iso === null ? null : Date.parse(iso));

/**
 * The attempts and requeues of a job in the order they happened, numbered
 * by run: each requeue starts a run, and its attempts start again from 1.
 * A recorded requeue comes before the first attempt that started at or
 * after it. Where the attempts start again with no requeue recorded
 * between them (a counted attempt followed by a number not above it; after
 * an uncounted outcome the number repeats without any requeue), the break
 * is shown as a requeue of unknown kind.
 */
export function timelineEntries(attempts: readonly ExecutionJson[], requeues: readonly RequeueJson[] = []): TimelineEntry[] {
  const entries: TimelineEntry[] = [];
  let run = 1;
  let next = 0;
  attempts.forEach((attempt, index) => {
    const started = timeOf(attempt.startedAt);
    let recorded = false;
    while (next < requeues.length && started !== null && (timeOf(requeues[next]!.at) ?? -Infinity) <= started) {
      entries.push({ kind: "requeue", requeue: requeues[next++]!, run: ++run });
      recorded = true;
    }
    const previous = attempts[index - 1];
    if (!recorded && previous !== undefined && !UNCOUNTED.has(previous.outcome) && attempt.attempt <= previous.attempt) {
      entries.push({ kind: "requeue", requeue: null, run: ++run });
    }
    entries.push({ kind: "attempt", attempt, run });
  });
  while (next < requeues.length) entries.push({ kind: "requeue", requeue: requeues[next++]!, run: ++run });
  return entries;
}

/** What ran the job again, in words. */
function RequeueWhat({ requeue }: { requeue: RequeueJson | null }) {
  switch (requeue?.action) {
    case undefined:
      return <>Run again</>;
    case "requeue":
      return <>Requeued from the dead-letter queue</>;
    case "bulk_retry":
      return (
        <>
          Retried by bulk action{" "}
          <a href={href(`/bulk-actions/${requeue.bulkActionId}`)} data-testid="requeue-bulk-action" title={requeue.bulkActionId}>
            <code>{requeue.bulkActionId?.slice(-12)}</code>
          </a>
        </>
      );
    case "resume":
      return <>Resumed</>;
    case "rerun":
      return <>Rerun from step “{requeue.fromStep}”</>;
  }
}

/**
 * Every attempt, oldest first: who ran it, when, how it ended, and why;
 * between them each requeue, named (`requeues`: the job's, recorded; a dead
 * letter's history has none, and its breaks are inferred).
 */
export function Timeline({ attempts, requeues = [] }: { attempts: ExecutionJson[]; requeues?: RequeueJson[] }) {
  if (attempts.length === 0 && requeues.length === 0) return <p class="muted">No attempts yet.</p>;
  const entries = timelineEntries(attempts, requeues);
  const runs = entries.at(-1)!.run;
  return (
    <ol class="timeline" data-testid="timeline">
      {entries.map((entry) => {
        if (entry.kind === "requeue") {
          return (
            <li key={`requeue-${entry.run}`} class="requeue" data-testid="requeue" data-action={entry.requeue?.action ?? "unknown"}>
              <span class="requeue-what">
                <RequeueWhat requeue={entry.requeue} />
              </span>
              : attempts start again (run {entry.run})
              {entry.requeue ? <span class="requeue-at muted"> {formatTime(entry.requeue.at)}</span> : null}
            </li>
          );
        }
        const { attempt, run } = entry;
        return (
          <li key={attempt.id} class={`attempt attempt-${attempt.outcome.replace(/[^a-z_]/g, "")}`} data-testid="attempt">
            <div class="attempt-head">
              <span class="attempt-number">{runs > 1 ? `Run ${run}, attempt ${attempt.attempt}` : `Attempt ${attempt.attempt}`}</span>
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
          </li>
        );
      })}
    </ol>
  );
}
