import { useState } from "preact/hooks";
import { type Api, ApiError } from "../api.js";
import { formatNumber } from "../format.js";
import type { JobJson } from "../types.js";
import { Notice } from "./common.js";

/** The states a job can be cancelled in (`POST /v1/jobs/{id}/cancel`); running ones are asked to stop. */
const CANCELLABLE = new Set(["waiting", "queued", "retrying", "running"]);
/** Cancels sent at once: a page holds at most 50 jobs, and the API serves others meanwhile. */
const PARALLEL = 4;

const jobs = (n: number) => `${formatNumber(n)} job${n === 1 ? "" : "s"}`;

/** What cancelling the selected jobs did, counted by the API's answer for each. */
interface CancelOutcome {
  cancelled: number;
  requested: number;
  ended: number;
  failed: string[];
}

/**
 * The rows ticked on the Jobs page and what can be done to them: Cancel
 * (each job through `POST /v1/jobs/{id}/cancel`, after a confirmation that
 * counts what it cancels and what it leaves). `selected` are the ticked
 * jobs still on the page, as last read.
 */
export function SelectionBar({ api, selected, onClear, onDone }: { api: Api; selected: JobJson[]; onClear: () => void; onDone: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<CancelOutcome | null>(null);
  const cancellable = selected.filter((job) => CANCELLABLE.has(job.status));
  const running = cancellable.filter((job) => job.status === "running").length;
  const left = selected.length - cancellable.length;

  const cancel = async () => {
    setBusy(true);
    const done: CancelOutcome = { cancelled: 0, requested: 0, ended: 0, failed: [] };
    const queue = cancellable.map((job) => job.id);
    const work = async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
        try {
          const { status } = await api.post(`/v1/jobs/${encodeURIComponent(id)}/cancel`);
          if (status === 202) done.requested += 1;
          else done.cancelled += 1;
        } catch (failure) {
          if (failure instanceof ApiError && failure.code === "ALREADY_TERMINAL") done.ended += 1;
          else done.failed.push(failure instanceof ApiError ? failure.message : String(failure));
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, work));
    setBusy(false);
    setConfirming(false);
    setOutcome(done);
    onDone();
  };

  return (
    <>
      {outcome ? <CancelNotice outcome={outcome} /> : null}
      {selected.length > 0 ? (
        <div class="bulk-bar-buttons" role="group" aria-label="selected jobs" data-testid="selection-bar">
          <strong data-testid="selected-count">{formatNumber(selected.length)} selected</strong>
          <button
            type="button"
            class="secondary"
            disabled={cancellable.length === 0 || busy}
            onClick={() => {
              setOutcome(null);
              setConfirming(true);
            }}
          >
            Cancel selected
          </button>
          <button type="button" class="link" onClick={onClear}>
            Clear selection
          </button>
        </div>
      ) : null}
      {confirming && selected.length > 0 ? (
        <section class="panel bulk-dialog" role="dialog" aria-label="Cancel the selected jobs?" data-testid="selection-confirm">
          <h2>Cancel the selected jobs?</h2>
          <p data-testid="selection-confirm-count">
            This cancels <strong>{jobs(cancellable.length)}</strong> of the {formatNumber(selected.length)} selected
            {running > 0 ? `; ${running === 1 ? "the running one is" : `the ${formatNumber(running)} running are`} asked to stop at its worker's next heartbeat` : ""}
            {left > 0 ? `; ${jobs(left)} already ended and ${left === 1 ? "is" : "are"} left as ${left === 1 ? "it is" : "they are"}` : ""}.
          </p>
          <div class="actions">
            <button type="button" class="danger" disabled={busy} onClick={cancel}>
              Cancel {jobs(cancellable.length)}
            </button>
            <button type="button" class="secondary" disabled={busy} onClick={() => setConfirming(false)}>
              Keep them
            </button>
          </div>
        </section>
      ) : null}
    </>
  );
}

function CancelNotice({ outcome }: { outcome: CancelOutcome }) {
  const parts = [
    `Cancelled ${jobs(outcome.cancelled)}`,
    ...(outcome.requested > 0 ? [`${jobs(outcome.requested)} running asked to stop`] : []),
    ...(outcome.ended > 0 ? [`${jobs(outcome.ended)} had ended meanwhile`] : []),
  ];
  return (
    <>
      <Notice kind="ok">
        <span data-testid="selection-outcome">{parts.join("; ")}.</span>
      </Notice>
      {outcome.failed.length > 0 ? (
        <Notice kind="error">
          {jobs(outcome.failed.length)} could not be cancelled: {[...new Set(outcome.failed)].join("; ")}
        </Notice>
      ) : null}
    </>
  );
}
