import { useState } from "preact/hooks";
import { type Api, ApiError, query } from "../api.js";
import { formatNumber } from "../format.js";
import type { DeadLetterPage, JobJson } from "../types.js";
import { Notice } from "./common.js";

/** Cancels sent at once: a page holds at most 50 jobs, and the API serves others meanwhile. */
const PARALLEL = 4;
/** Dead letters read per page, and pages read at most, while looking for the selected dead jobs' entries. */
const DEAD_LETTER_PAGE = 1_000;
const DEAD_LETTER_PAGES = 20;

const jobs = (n: number) => `${formatNumber(n)} job${n === 1 ? "" : "s"}`;

/**
 * What can be done to ticked rows, each through the API's route for one job:
 * cancel (`POST /v1/jobs/{id}/cancel`: waiting, queued, retrying and
 * sleeping jobs at once, running ones asked to stop), and for dead jobs retry (requeue from
 * the dead-letter queue with fresh attempts) and purge (delete with the
 * history), through their dead letters.
 */
type SelectionAction = "cancel" | "retry" | "purge";

const APPLIES: Record<SelectionAction, ReadonlySet<string>> = {
  cancel: new Set(["waiting", "queued", "retrying", "sleeping", "running"]),
  retry: new Set(["dead"]),
  purge: new Set(["dead"]),
};

const BUTTONS: Record<SelectionAction, string> = { cancel: "Cancel selected", retry: "Retry selected", purge: "Purge selected" };
const VERBS: Record<SelectionAction, string> = { cancel: "Cancel", retry: "Retry", purge: "Purge" };
const DONE: Record<SelectionAction, string> = { cancel: "Cancelled", retry: "Requeued", purge: "Purged" };

/** What an action did to the selected jobs, counted by the API's answer for each. */
interface Outcome {
  action: SelectionAction;
  done: number;
  /** Running jobs asked to stop (cancel). */
  requested: number;
  /** Jobs that were no longer in a state the action applies to when it reached them. */
  moved: number;
  failed: string[];
}

/** Each selected dead job's dead-letter id, read from `GET /v1/dead-letters` per kind, queue and tenant (newest first, paged). */
async function deadLetterIds(api: Api, dead: JobJson[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const groups = new Map<string, JobJson[]>();
  for (const job of dead) {
    const group = `${job.kind}\u0000${job.queue}\u0000${job.tenant}`;
    groups.set(group, [...(groups.get(group) ?? []), job]);
  }
  for (const members of groups.values()) {
    const { kind, queue, tenant } = members[0]!;
    const wanted = new Set(members.map((job) => job.id));
    let cursor: string | null = null;
    for (let page = 0; page < DEAD_LETTER_PAGES && wanted.size > 0; page += 1) {
      const answer: DeadLetterPage = await api.get<DeadLetterPage>(`/v1/dead-letters${query({ kind, queue, tenant, limit: DEAD_LETTER_PAGE, cursor })}`);
      for (const entry of answer.items) {
        if (wanted.delete(entry.jobId)) found.set(entry.jobId, entry.id);
      }
      cursor = answer.nextCursor;
      if (cursor === null) break;
    }
  }
  return found;
}

/**
 * The rows ticked on the Jobs page and what can be done to them: Cancel,
 * Retry and Purge, each after a confirmation that counts the selected jobs
 * it applies to and the ones it leaves. `selected` are the ticked jobs still
 * on the page, as last read.
 */
export function SelectionBar({ api, selected, onClear, onDone }: { api: Api; selected: JobJson[]; onClear: () => void; onDone: () => void }) {
  const [confirming, setConfirming] = useState<SelectionAction | null>(null);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const applying = (action: SelectionAction) => selected.filter((job) => APPLIES[action].has(job.status));

  const run = async (action: SelectionAction) => {
    setBusy(true);
    const result: Outcome = { action, done: 0, requested: 0, moved: 0, failed: [] };
    const targets = applying(action);
    let work: Array<() => Promise<void>>;
    const failed = (failure: unknown) => {
      if (failure instanceof ApiError && (failure.code === "ALREADY_TERMINAL" || failure.code === "NOT_FOUND")) result.moved += 1;
      else result.failed.push(failure instanceof ApiError ? failure.message : String(failure));
    };
    try {
      if (action === "cancel") {
        work = targets.map((job) => async () => {
          const { status } = await api.post(`/v1/jobs/${encodeURIComponent(job.id)}/cancel`);
          if (status === 202) result.requested += 1;
          else result.done += 1;
        });
      } else {
        const entries = await deadLetterIds(api, targets);
        result.moved += targets.length - entries.size;
        work = [...entries.values()].map((entry) => async () => {
          if (action === "retry") await api.post(`/v1/dead-letters/${encodeURIComponent(entry)}/requeue`);
          else await api.delete(`/v1/dead-letters/${encodeURIComponent(entry)}`);
          result.done += 1;
        });
      }
      const next = async () => {
        for (let task = work.shift(); task !== undefined; task = work.shift()) await task().catch(failed);
      };
      await Promise.all(Array.from({ length: PARALLEL }, next));
    } catch (failure) {
      failed(failure);
    }
    setBusy(false);
    setConfirming(null);
    setOutcome(result);
    onDone();
  };

  return (
    <>
      {outcome ? <OutcomeNotice outcome={outcome} /> : null}
      {selected.length > 0 ? (
        <div class="bulk-bar-buttons" role="group" aria-label="selected jobs" data-testid="selection-bar">
          <strong data-testid="selected-count">{formatNumber(selected.length)} selected</strong>
          {(["cancel", "retry", "purge"] as const).map((action) => (
            <button
              key={action}
              type="button"
              class={action === "purge" ? "danger" : "secondary"}
              disabled={applying(action).length === 0 || busy}
              title={applying(action).length === 0 ? `none of the selected is ${[...APPLIES[action]].join(" or ")}` : undefined}
              onClick={() => {
                setOutcome(null);
                setConfirming(action);
              }}
            >
              {BUTTONS[action]}
            </button>
          ))}
          <button type="button" class="link" onClick={onClear}>
            Clear selection
          </button>
        </div>
      ) : null}
      {confirming && selected.length > 0 ? (
        <Confirm action={confirming} selected={selected} applying={applying(confirming)} busy={busy} onConfirm={() => void run(confirming)} onClose={() => setConfirming(null)} />
      ) : null}
    </>
  );
}

function Confirm({
  action,
  selected,
  applying,
  busy,
  onConfirm,
  onClose,
}: {
  action: SelectionAction;
  selected: JobJson[];
  applying: JobJson[];
  busy: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  const running = applying.filter((job) => job.status === "running").length;
  const left = selected.length - applying.length;
  const asIs = left === 1 ? "is left as it is" : "are left as they are";
  const leftWords =
    left === 0 ? "" : action === "cancel" ? `; ${jobs(left)} already ended and ${asIs}` : `; the other ${jobs(left)}, not dead, ${asIs}`;
  const what =
    action === "cancel" ? (
      <>
        This cancels <strong>{jobs(applying.length)}</strong> of the {formatNumber(selected.length)} selected
        {running > 0 ? `; ${running === 1 ? "the running one is" : `the ${formatNumber(running)} running are`} asked to stop at its worker's next heartbeat` : ""}
      </>
    ) : action === "retry" ? (
      <>
        This puts <strong>{jobs(applying.length)}</strong> of the {formatNumber(selected.length)} selected back in their queues from the dead-letter queue, with fresh
        attempts and their history kept
      </>
    ) : (
      <>
        This deletes <strong>{jobs(applying.length)}</strong> of the {formatNumber(selected.length)} selected for good, with{" "}
        {applying.length === 1 ? "its" : "their"} history
      </>
    );
  return (
    <section class="panel bulk-dialog" role="dialog" aria-label={`${VERBS[action]} the selected jobs?`} data-testid="selection-confirm">
      <h2>{VERBS[action]} the selected jobs?</h2>
      <p data-testid="selection-confirm-count">
        {what}
        {leftWords}.
      </p>
      <div class="actions">
        <button type="button" class="danger" disabled={busy} onClick={onConfirm}>
          {VERBS[action]} {jobs(applying.length)}
        </button>
        <button type="button" class="secondary" disabled={busy} onClick={onClose}>
          Keep them
        </button>
      </div>
    </section>
  );
}

function OutcomeNotice({ outcome }: { outcome: Outcome }) {
  const parts = [
    `${DONE[outcome.action]} ${jobs(outcome.done)}`,
    ...(outcome.requested > 0 ? [`${jobs(outcome.requested)} running asked to stop`] : []),
    ...(outcome.moved > 0 ? [`${jobs(outcome.moved)} had moved on meanwhile`] : []),
  ];
  return (
    <>
      <Notice kind="ok">
        <span data-testid="selection-outcome">{parts.join("; ")}.</span>
      </Notice>
      {outcome.failed.length > 0 ? (
        <Notice kind="error">
          {jobs(outcome.failed.length)} could not be changed: {[...new Set(outcome.failed)].join("; ")}
        </Notice>
      ) : null}
    </>
  );
}
