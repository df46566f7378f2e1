import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { type Api, ApiError } from "../api.js";
import { formatTime } from "../format.js";
import { usePoll } from "../poll.js";
import { href } from "../router.js";
import type { JobWithExecutions } from "../types.js";
import { Badge, Due, Facts, JsonBlock, Notice, Problem, QueueLink, StoredError, Updated } from "./common.js";
import { Timeline } from "./timeline.js";
import { JobOutput } from "./job-output.js";
import { JobLinks } from "./job-links.js";
import { JobSteps, type StepActionOutcome } from "./job-steps.js";

const REFRESH_MS = 2_000;
const CANCELLABLE = new Set(["waiting", "queued", "retrying", "sleeping", "running"]);

/**
 * One job: its fields, payload, a durable job's steps (with Resume and
 * Rerun from a step), every attempt, and a cancel button while it can
 * still be cancelled.
 */
export function JobPage({ api, id }: { api: Api; id: string }) {
  const { data: job, error, updatedAt, refresh } = usePoll(
    () => api.get<JobWithExecutions>(`/v1/jobs/${encodeURIComponent(id)}`),
    REFRESH_MS,
    [api, id],
    "job",
  );
  const [action, setAction] = useState<{ kind: "ok" | "error"; text: string } | null>(null);
  const [busy, setBusy] = useState(false);

  const stepsChanged = async (outcome: StepActionOutcome) => {
    setAction(outcome);
    await refresh();
  };

  const cancel = async () => {
    setBusy(true);
    try {
      const { status } = await api.post(`/v1/jobs/${encodeURIComponent(id)}/cancel`);
      setAction({
        kind: "ok",
        text: status === 202 ? "Cancellation requested: the handler is told at its worker's next heartbeat." : "Cancelled.",
      });
    } catch (failure) {
      setAction({ kind: "error", text: failure instanceof ApiError ? failure.message : String(failure) });
    } finally {
      setBusy(false);
      await refresh();
    }
  };

  if (!job) {
    return (
      <section>
        <p>
          <a href={href("/jobs")}>← Jobs</a>
        </p>
        <Problem error={error} />
        {error ? null : <p class="muted">Loading…</p>}
      </section>
    );
  }
  return (
    <section data-testid="job-page">
      <p>
        <a href={href("/jobs")}>← Jobs</a>
      </p>
      <header class="page-head">
        <h1>
          {job.kind} <Badge value={job.status} />
          <Due job={job} />
        </h1>
        <Updated at={updatedAt} error={error} />
      </header>
      <Problem error={error} />
      {action ? <Notice kind={action.kind}>{action.text}</Notice> : null}
      {CANCELLABLE.has(job.status) && !job.cancelRequested ? (
        <button type="button" class="danger" disabled={busy} onClick={cancel}>
          Cancel job
        </button>
      ) : null}
      {job.cancelRequested && job.status === "running" ? <p class="muted">Cancellation requested; waiting for the handler to stop.</p> : null}
      <Facts
        items={[
          ["Id", <code>{job.id}</code>],
          ["Tenant", job.tenant],
          ["Queue", <QueueLink queue={job.queue} />],
          ["Priority", job.priority],
          ["Attempts", `${job.attempts} / ${job.maxAttempts}`],
          ["Run at", formatTime(job.runAt)],
          ["Created", formatTime(job.createdAt)],
          ["Started", formatTime(job.startedAt)],
          ["Finished", formatTime(job.finishedAt)],
          ["Last error", <StoredError error={job.lastError} />],
          ...(job.uniqueKey !== null ? [["Unique key", <code data-testid="unique-key">{job.uniqueKey}</code>] as [string, ComponentChildren]] : []),
          ...(job.limitKey !== null ? [["Limit key", <code data-testid="limit-key">{job.limitKey}</code>] as [string, ComponentChildren]] : []),
        ]}
      />
      <h2>Payload</h2>
      <JsonBlock value={job.payload} label="payload" />
      <JobOutput job={job} />
      <JobSteps api={api} job={job} onDone={stepsChanged} />
      <JobLinks api={api} id={job.id} />
      <h2>Execution timeline</h2>
      <Timeline attempts={job.executions} requeues={job.requeues} />
      {job.status === "dead" ? (
        <p>
          This job is in the <a href={href("/dead-letters", { kind: job.kind })}>dead-letter queue</a>.
        </p>
      ) : null}
    </section>
  );
}
