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

/** A running job's latest progress in one short line, for the jobs list; nothing otherwise. */
export function ProgressHint({ job }: { job: { status: string; progress: unknown } }) {
  if (job.status !== "running" || job.progress === null) return null;
  const text = JSON.stringify(job.progress);
  return (
    <span class="muted" data-testid="progress-hint" title={text}>
      {" "}
      {text.length > HINT_LENGTH ? `${text.slice(0, HINT_LENGTH - 1)}…` : text}
    </span>
  );
}
