import { useEffect, useRef, useState } from "preact/hooks";
import { type Api, ApiError, query } from "../api.js";
import { formatJobCount } from "../format.js";
import { coversEverything, describeSearch, filterOf, type Search, setFields, statusesOf } from "../search.js";
import { BULK_ACTION_STATES, BULK_ACTIONS, type BulkActionKind, type BulkActionRequest, type BulkActionStarted, type JobCount } from "../types.js";
import { Problem } from "./common.js";

/** Each action's button. */
export const ACTION_NAMES: Record<BulkActionKind, string> = {
  retry: "Retry",
  cancel: "Cancel",
  purge: "Purge",
  set_priority: "Set priority",
  move: "Move",
};

/**
 * Every action, always offered: whether it applies to the jobs a search
 * selects is the server's to decide (an action whose states the search
 * excludes is refused with the reason), and the confirmation says which
 * jobs each one touches.
 */
export function BulkBar({ disabled, onChoose }: { disabled: boolean; onChoose: (action: BulkActionKind) => void }) {
  return (
    <div class="bulk-bar-buttons" role="group" aria-label="bulk actions over this search">
      <span class="muted">Act on all of them:</span>
      {BULK_ACTIONS.map((action) => (
        <button key={action} type="button" class={action === "purge" ? "danger" : "secondary"} disabled={disabled} onClick={() => onChoose(action)}>
          {ACTION_NAMES[action]}
        </button>
      ))}
    </div>
  );
}

/**
 * The confirmation of a bulk action over the page's search: the action, the
 * search in words and how many jobs it would touch (counted for the states
 * the action applies to), its parameter for set priority and move, and for
 * a search that names nothing an explicit "every job" box. Starting it hands
 * the running operation to `onStarted`.
 */
export function BulkDialog({
  api,
  search,
  action,
  onStarted,
  onClose,
}: {
  api: Api;
  search: Search;
  action: BulkActionKind;
  onStarted: (operation: BulkActionStarted) => void;
  onClose: () => void;
}) {
  const actionStates = BULK_ACTION_STATES[action];
  const named = statusesOf(search);
  const states = named.length === 0 ? [...actionStates] : actionStates.filter((state) => named.includes(state));
  const everything = coversEverything(search);
  const [count, setCount] = useState<JobCount | ApiError | null>(null);
  const [priority, setPriority] = useState("0");
  const [queue, setQueue] = useState("");
  const [confirmedAll, setConfirmedAll] = useState(false);
  const [problem, setProblem] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const panel = useRef<HTMLElement>(null);

  useEffect(() => {
    panel.current?.scrollIntoView({ block: "nearest" });
  }, []);

  const countKey = `${JSON.stringify(setFields(search))}|${states.join(",")}`;
  useEffect(() => {
    let live = true;
    setCount(null);
    if (states.length === 0) {
      setCount({ count: 0, estimated: false });
      return;
    }
    api
      .get<JobCount>(`/v1/jobs/count${query({ ...setFields(search), status: states.join(",") })}`)
      .then((answer) => live && setCount(answer))
      .catch((error: unknown) => live && setCount(error instanceof ApiError ? error : new ApiError(0, "CLIENT", String(error))));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, countKey]);

  const countText = count === null ? "…" : count instanceof ApiError ? "the matching jobs" : formatJobCount(count.count, count.estimated);

  const start = async (event: Event) => {
    event.preventDefault();
    setProblem(null);
    const request: BulkActionRequest = { action, filter: filterOf(search) };
    if (action === "set_priority") {
      const value = Number(priority);
      if (priority.trim() === "" || !Number.isInteger(value)) return setProblem(new ApiError(0, "CLIENT", "New priority: a whole number from -1000 to 1000."));
      request.priority = value;
    }
    if (action === "move") {
      if (queue.trim() === "") return setProblem(new ApiError(0, "CLIENT", "Move to queue: name the queue the jobs move to."));
      request.queue = queue.trim();
    }
    if (everything) request.all = true;
    setBusy(true);
    try {
      const { body } = await api.postJson<BulkActionStarted>("/v1/bulk-actions", request);
      onStarted(body);
    } catch (error) {
      setProblem(error instanceof ApiError ? error : new ApiError(0, "CLIENT", String(error)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section ref={panel} class="panel bulk-dialog" role="dialog" aria-labelledby="bulk-dialog-title" data-testid="bulk-dialog">
      <form onSubmit={start}>
        <h2 id="bulk-dialog-title">
          {ACTION_NAMES[action]} <span data-testid="bulk-dialog-count">{countText}</span>?
        </h2>
        <p>
          <span class="muted">Jobs: </span>
          <span data-testid="bulk-dialog-filter">{describeSearch(search)}</span>
        </p>
        <p class="muted">
          {ACTION_NAMES[action]} acts on {actionStates.join(", ")} jobs; the others this search finds are left as they are.
          {count instanceof ApiError ? ` (Not counted: ${count.message})` : ""}
        </p>
        {states.length === 0 ? (
          <p class="problem" role="status">
            The statuses this search names ({named.join(", ")}) are none that {ACTION_NAMES[action].toLowerCase()} acts on: the server will refuse it.
          </p>
        ) : null}
        {action === "set_priority" ? (
          <label class="field">
            New priority
            <input name="priority" type="number" min={-1000} max={1000} step={1} value={priority} onInput={(event) => setPriority(event.currentTarget.value)} />
          </label>
        ) : null}
        {action === "move" ? (
          <label class="field">
            Move to queue
            <input name="targetQueue" value={queue} onInput={(event) => setQueue(event.currentTarget.value)} />
          </label>
        ) : null}
        {everything ? (
          <label class="check">
            <input type="checkbox" checked={confirmedAll} onChange={(event) => setConfirmedAll(event.currentTarget.checked)} />
            The search names nothing: act on every job{search.tenant ? ` of tenant ${search.tenant}` : ""}.
          </label>
        ) : null}
        <Problem error={problem} />
        <div class="actions">
          <button type="submit" class={action === "purge" || action === "cancel" ? "danger" : undefined} disabled={busy || (everything && !confirmedAll)}>
            Confirm {ACTION_NAMES[action].toLowerCase()}
          </button>
          <button type="button" class="secondary" onClick={onClose}>
            Back
          </button>
        </div>
      </form>
    </section>
  );
}
