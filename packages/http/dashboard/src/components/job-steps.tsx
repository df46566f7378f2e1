import { useState } from "preact/hooks";
import { RECORD_TRANSITIONS, TRANSITIONS } from "conveyor-jobs/browser";
import { type Api, ApiError } from "../api.js";
import { formatDuration, formatTime, shortId } from "../format.js";
import { usePoll } from "../poll.js";
import type { JobJson, StepJson, StepList } from "../types.js";
import { Badge, Problem, StoredError } from "./common.js";
import { JsonHint } from "./job-output.js";

const REFRESH_MS = 2_000;
/** The states `POST /v1/jobs/{id}/resume` and `/rerun` take: the library's own list. */
const RERUNNABLE = new Set<string>(Object.keys(TRANSITIONS.rerun_from_step));

/** What a resume or a rerun did, for the job page's notice. */
export interface StepActionOutcome {
  kind: "ok" | "error";
  text: string;
}

/** The action waiting for its confirmation: resume, or a rerun from the named step. */
type Pending = { action: "resume" } | { action: "rerun"; step: StepJson };

/**
 * A durable job's steps, sleeps and waits (`GET /v1/jobs/{id}/steps`), one
 * row each in the order the job first recorded them, with Resume and
 * "Rerun from this step" while the job is in a state they apply to; each
 * asks first. Nothing at all for a job without records. `onDone` hears
 * what an action did, after which the steps are read again.
 */
export function JobSteps({ api, job, onDone }: { api: Api; job: JobJson; onDone: (outcome: StepActionOutcome) => void | Promise<void> }) {
  const path = `/v1/jobs/${encodeURIComponent(job.id)}`;
  const { data, error, refresh } = usePoll(() => api.get<StepList>(`${path}/steps`), REFRESH_MS, [api, job.id], "job-steps");
  const [pending, setPending] = useState<Pending | null>(null);
  const [busy, setBusy] = useState(false);
  const steps = data?.items ?? [];
  // A read that failed before any answer is the job's own problem line's to report (the page reads the job too).
  if (steps.length === 0) return null;
  const rerunnable = RERUNNABLE.has(job.status);

  const act = async (work: () => Promise<unknown>, done: string) => {
    setBusy(true);
    let outcome: StepActionOutcome;
    try {
      await work();
      outcome = { kind: "ok", text: done };
    } catch (failure) {
      outcome = { kind: "error", text: failure instanceof ApiError ? failure.message : String(failure) };
    }
    setBusy(false);
    setPending(null);
    await Promise.all([refresh(), onDone(outcome)]);
  };
  const confirm = () => {
    if (pending?.action === "resume") return act(() => api.post(`${path}/resume`), "Resumed: the job is queued and replays its recorded steps.");
    if (pending?.action === "rerun") {
      const name = pending.step.name;
      return act(() => api.postJson(`${path}/rerun`, { fromStep: name }), `Queued to rerun from ${JSON.stringify(name)}.`);
    }
  };

  return (
    <>
      <h2>Steps</h2>
      <Problem error={error} />
      {rerunnable ? (
        <div class="actions">
          <button type="button" class="secondary" disabled={busy || pending !== null} onClick={() => setPending({ action: "resume" })}>
            Resume
          </button>
        </div>
      ) : null}
      {pending ? <Confirm pending={pending} steps={steps} busy={busy} onConfirm={() => void confirm()} onClose={() => setPending(null)} /> : null}
      <div class="table-wrap">
        <table class="data sticky-1" data-testid="job-steps">
          <thead>
            <tr>
              <th>Name</th>
              <th>Kind</th>
              <th>State</th>
              <th class="num">Attempt</th>
              <th>Started</th>
              <th>Finished</th>
              <th class="num">Duration</th>
              <th>Result</th>
              {rerunnable ? <th /> : null}
            </tr>
          </thead>
          <tbody>
            {steps.map((step) => (
              <tr key={step.name} data-step={step.name} data-testid="job-step">
                <td>
                  <code>{step.name}</code>
                </td>
                <td>{step.kind}</td>
                <td>
                  <Badge value={step.state} />
                </td>
                <td class="num">{step.attempt}</td>
                <td>{formatTime(step.startedAt)}</td>
                <td>{formatTime(step.finishedAt)}</td>
                <td class="num nowrap">{step.startedAt && step.finishedAt ? formatDuration(Date.parse(step.finishedAt) - Date.parse(step.startedAt)) : "—"}</td>
                <td class="step-detail" data-testid="step-detail">
                  <StepDetail step={step} />
                </td>
                {rerunnable ? (
                  <td>
                    <button type="button" class="secondary small nowrap" disabled={busy || pending !== null} onClick={() => setPending({ action: "rerun", step })}>
                      Rerun from this step
                    </button>
                  </td>
                ) : null}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** What a record holds beyond its state: a step's result or error, a sleep's wake time, a wait's event, key, deadline and what it received. */
function StepDetail({ step }: { step: StepJson }) {
  if (step.kind === "sleep") {
    return step.state === RECORD_TRANSITIONS.sleep.slept.to ? (
      <span data-testid="step-wake">wakes {formatTime(step.wakeAt)}</span>
    ) : (
      <span class="muted">woke</span>
    );
  }
  if (step.kind === "wait") {
    return (
      <div class="step-lines">
        <span>
          event <code>{step.event}</code>
          {step.eventKey ? (
            <>
              {" "}
              key <code>{step.eventKey}</code>
            </>
          ) : (
            <span class="muted"> (no key)</span>
          )}
        </span>
        <span data-testid="step-deadline">{step.wakeAt ? `deadline ${formatTime(step.wakeAt)}` : "no deadline"}</span>
        {step.eventId ? (
          <span>
            received <code title={step.eventId}>{shortId(step.eventId)}</code> <JsonHint value={step.result} testid="step-result" />
          </span>
        ) : null}
      </div>
    );
  }
  if (step.state === RECORD_TRANSITIONS.step.threw.to) return <StoredError error={step.error} />;
  return <JsonHint value={step.result} testid="step-result" />;
}

function Confirm({ pending, steps, busy, onConfirm, onClose }: { pending: Pending; steps: StepJson[]; busy: boolean; onConfirm: () => void; onClose: () => void }) {
  const records = (n: number) => `${n} record${n === 1 ? "" : "s"}`;
  if (pending.action === "resume") {
    return (
      <section class="panel bulk-dialog" role="dialog" aria-label="Resume this job?" data-testid="steps-confirm">
        <h2>Resume this job?</h2>
        <p data-testid="steps-confirm-text">
          It runs again from the top with fresh attempts, replaying its {records(steps.length)}: what was recorded is not done again.
        </p>
        <div class="actions">
          <button type="button" disabled={busy} onClick={onConfirm}>
            Resume job
          </button>
          <button type="button" class="secondary" disabled={busy} onClick={onClose}>
            Keep it as it is
          </button>
        </div>
      </section>
    );
  }
  const { step } = pending;
  const later = steps.filter((other) => other.seq > step.seq).length;
  return (
    <section class="panel bulk-dialog" role="dialog" aria-label={`Rerun from ${step.name}?`} data-testid="steps-confirm">
      <h2>
        Rerun from <code>{step.name}</code>?
      </h2>
      <p data-testid="steps-confirm-text">
        This forgets the record of <code>{step.name}</code>
        {later > 0 ? ` and the ${records(later)} after it` : ""}, and queues the job: what it recorded before replays, <code>{step.name}</code> and what follows
        run again.
      </p>
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
          Rerun from {step.name}
        </button>
        <button type="button" class="secondary" disabled={busy} onClick={onClose}>
          Keep them
        </button>
      </div>
    </section>
  );
}
