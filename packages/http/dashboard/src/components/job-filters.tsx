import { useEffect, useState } from "preact/hooks";
import { ApiError } from "../api.js";
import { zoneOf } from "../format.js";
import { href } from "../router.js";
import { checkSearch, FIELD_LABELS, fromLocalInput, MORE_FIELDS, type Search, SEARCH_FIELDS, toLocalInput } from "../search.js";
import { JOB_STATUSES } from "../types.js";
import { Problem } from "./common.js";

const TIME_FIELDS = new Set<string>(["createdAfter", "createdBefore", "finishedAfter", "finishedBefore"]);

/**
 * The Jobs page's search form. Status, kind, queue and tenant apply as soon
 * as they change; "More filters" is a form of its own applied by its Search
 * button, so a payload or error text being typed is never sent half-written,
 * and a payload that is not a JSON object is named before anything is sent.
 */
export function JobFilters({
  search,
  choices,
  onApply,
}: {
  search: Search;
  choices: { kinds: string[]; queues: string[] };
  onApply: (next: Search) => void;
}) {
  const moreSet = MORE_FIELDS.filter((field) => search[field] !== "").length;
  const moreKey = MORE_FIELDS.map((field) => search[field]).join("\u0000");
  const [open, setOpen] = useState(moreSet > 0);
  // A search that sets any of these (a link, Back, a shared URL) opens the panel, so no active filter is hidden.
  useEffect(() => {
    if (moreSet > 0) setOpen(true);
  }, [moreKey]);
  const apply = (change: Partial<Search>) => onApply({ ...search, ...change });
  const statuses = [...JOB_STATUSES, ...(search.status !== "" && !(JOB_STATUSES as readonly string[]).includes(search.status) ? [search.status] : [])];
  return (
    <div class="search">
      <form class="filters" onSubmit={(event) => event.preventDefault()} aria-label="filters">
        <label>
          Status
          <select name="status" value={search.status} onChange={(event) => apply({ status: event.currentTarget.value })}>
            <option value="">any</option>
            {statuses.map((status) => (
              <option key={status} value={status}>
                {status.replace(/,/g, ", ")}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <input name="kind" list="kinds" value={search.kind} placeholder="any" onChange={(event) => apply({ kind: event.currentTarget.value.trim() })} />
          <datalist id="kinds">
            {choices.kinds.map((kind) => (
              <option key={kind} value={kind} />
            ))}
          </datalist>
        </label>
        <label>
          Queue
          <select name="queue" value={search.queue} onChange={(event) => apply({ queue: event.currentTarget.value })}>
            <option value="">any</option>
            {[...new Set([...choices.queues, ...(search.queue ? [search.queue] : [])])].map((queue) => (
              <option key={queue} value={queue}>
                {queue}
              </option>
            ))}
          </select>
        </label>
        <label>
          Tenant
          <input name="tenant" value={search.tenant} placeholder="any" onChange={(event) => apply({ tenant: event.currentTarget.value.trim() })} />
        </label>
        {SEARCH_FIELDS.some((field) => search[field] !== "") ? (
          <a class="button-link" href={href("/jobs")}>
            Clear filters
          </a>
        ) : null}
      </form>
      <details class="more-filters" open={open} onToggle={(event) => setOpen(event.currentTarget.open)}>
        <summary>
          More filters
          {moreSet > 0 ? (
            <span data-testid="more-filters-set">
              {" "}
              ({moreSet} set: {MORE_FIELDS.filter((field) => search[field] !== "").map((field) => FIELD_LABELS[field]).join(", ")})
            </span>
          ) : null}
        </summary>
        {/* Keyed by the URL's values: a new search (a link, Back) starts the drafts over. */}
        <MoreFilters key={moreKey} search={search} onApply={onApply} />
      </details>
    </div>
  );
}

function MoreFilters({ search, onApply }: { search: Search; onApply: (next: Search) => void }) {
  const [draft, setDraft] = useState<Record<string, string>>(() =>
    Object.fromEntries(MORE_FIELDS.map((field) => [field, TIME_FIELDS.has(field) ? toLocalInput(search[field]) : search[field]])),
  );
  const [problem, setProblem] = useState<ApiError | null>(null);
  const set = (field: string, value: string) => setDraft((previous) => ({ ...previous, [field]: value }));

  const submit = (event: Event) => {
    event.preventDefault();
    const next: Search = { ...search };
    for (const field of MORE_FIELDS) {
      const value = (draft[field] ?? "").trim();
      next[field] = TIME_FIELDS.has(field) ? fromLocalInput(value) : value;
    }
    const problems = checkSearch(next);
    if (problems.length > 0) return setProblem(new ApiError(0, "FILTER", problems.join(" ")));
    setProblem(null);
    onApply(next);
  };
  const clear = () => {
    const next: Search = { ...search };
    for (const field of MORE_FIELDS) next[field] = "";
    onApply(next);
  };

  const text = (field: (typeof MORE_FIELDS)[number], placeholder: string) => (
    <label>
      {FIELD_LABELS[field]}
      <input name={field} value={draft[field]} placeholder={placeholder} onInput={(event) => set(field, event.currentTarget.value)} />
    </label>
  );
  const time = (field: (typeof MORE_FIELDS)[number]) => (
    <label>
      {FIELD_LABELS[field]}
      <input name={field} type="datetime-local" step={1} value={draft[field]} onInput={(event) => set(field, event.currentTarget.value)} />
    </label>
  );
  return (
    <form class="filters more" onSubmit={submit} aria-label="more filters">
      {text("id", "e.g. 0192f3a1")}
      {text("idempotencyKey", "exact")}
      {text("uniqueKey", "exact")}
      {text("error", "text in the last error")}
      <label class="wide">
        {FIELD_LABELS.payload}
        <textarea name="payload" rows={2} value={draft.payload} placeholder='e.g. {"customerId":42}' onInput={(event) => set("payload", event.currentTarget.value)} />
      </label>
      {time("createdAfter")}
      {time("createdBefore")}
      {time("finishedAfter")}
      {time("finishedBefore")}
      <p class="muted wide">
        Times are in your browser's zone ({zoneOf(new Date())}); "after" includes the moment, "before" does not.
      </p>
      <Problem error={problem} />
      <div class="actions wide">
        <button type="submit">Search</button>
        <button type="button" class="secondary" onClick={clear}>
          Clear these
        </button>
      </div>
    </form>
  );
}
