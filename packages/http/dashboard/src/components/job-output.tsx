import { formatTime } from "../format.js";
import type { JobWithExecutions } from "../types.js";
import { JsonBlock } from "./common.js";

/**
 * What the handler reported about its work: the latest progress (while it
 * runs, and kept after it ends) and the result it returned. Nothing when it
 * reported neither, so jobs without them keep a short page.
 */
export function JobOutput({ job }: { job: JobWithExecutions }) {
  return (
    <>
      {job.progress !== null ? (
        <>
          <h2>Progress</h2>
          <p class="muted">Reported {formatTime(job.progressUpdatedAt)}</p>
          <JsonBlock value={job.progress} label="progress" />
        </>
      ) : null}
      {job.status === "succeeded" && job.result !== null ? (
        <>
          <h2>Result</h2>
          <JsonBlock value={job.result} label="result" />
        </>
      ) : null}
    </>
  );
}

const HINT_LENGTH = 40;

/**
 * A JSON value in one short line, cut at `length` characters with the whole
 * text as the tooltip: for tables, where a pretty-printed block would not
 * fit. A text node, as every value from callers and handlers is.
 */
export function JsonHint({ value, testid, length = HINT_LENGTH }: { value: unknown; testid: string; length?: number }) {
  const text = JSON.stringify(value) ?? String(value);
  return (
    <span class="muted" data-testid={testid} title={text}>
      {text.length > length ? `${text.slice(0, length - 1)}…` : text}
    </span>
  );
}

/** A running job's latest progress in one short line, for the jobs list; nothing otherwise. */
export function ProgressHint({ job }: { job: { status: string; progress: unknown } }) {
  if (job.status !== "running" || job.progress === null) return null;
  return (
    <>
      {" "}
      <JsonHint value={job.progress} testid="progress-hint" />
    </>
  );
}
