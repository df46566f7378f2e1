import type { ComponentChildren } from "preact";
import type { ApiError } from "../api.js";
import { formatClock, formatDuration, formatTime, prettyJson, shortId } from "../format.js";
import { href } from "../router.js";
import type { ErrorJson } from "../types.js";

// Everything attacker-controlled (payloads, error names and messages, kinds,
// queues, tenants, worker ids) is rendered as a text child: Preact sets it
// as a text node, so markup in it stays text. Nothing here uses
// dangerouslySetInnerHTML, and the server's Content-Security-Policy refuses
// inline script besides.

/** A job status or an attempt outcome as a coloured label. */
export function Badge({ value }: { value: string }) {
  return (
    <span class={`badge badge-${value.replace(/[^a-z_]/g, "")}`} data-testid="status">
      {value}
    </span>
  );
}

/** JSON shown as text in a <pre>. */
export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" aria-label={label} data-testid={label}>
      {prettyJson(value)}
    </pre>
  );
}

export function StoredError({ error }: { error: ErrorJson | null }) {
  if (!error) return <span class="muted">—</span>;
  return (
    <span class="error-text">
      <strong>{error.name}</strong>: {error.message}
    </span>
  );
}

/** An API failure in one line. */
export function Problem({ error }: { error: ApiError | null }) {
  if (!error) return null;
  return (
    <p class="problem" role="alert">
      {error.status ? `${error.status} ${error.code}: ` : ""}
      {error.message}
    </p>
  );
}

export function Notice({ kind, children }: { kind: "ok" | "error"; children: ComponentChildren }) {
  return (
    <p class={kind === "ok" ? "notice" : "problem"} role="status">
      {children}
    </p>
  );
}

/** Label/value pairs. */
export function Facts({ items }: { items: Array<[string, ComponentChildren]> }) {
  return (
    <dl class="facts">
      {items.map(([label, value]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

/** When the page last loaded; "loading…" only before the first answer, and nothing while an error is shown instead. */
export function Updated({ at, error }: { at: Date | null; error: ApiError | null }) {
  if (!at && error) return null;
  return <span class="updated muted">{at ? `updated ${formatClock(at)}` : "loading…"}</span>;
}

/** A record's short id, linking to its page (`path` is the page's route up to the id, e.g. "/jobs"). */
export function IdLink({ path, id }: { path: string; id: string }) {
  return (
    <a href={href(`${path}/${id}`)}>
      <code>{shortId(id)}</code>
    </a>
  );
}

/** A queue's route: `#/queues/<name>`, the name encoded (it may hold "/" and ":"). */
export function queuePath(queue: string): string {
  return `/queues/${encodeURIComponent(queue)}`;
}

/** A queue's name, linking to its page. */
export function QueueLink({ queue }: { queue: string }) {
  return (
    <a href={href(queuePath(queue))} data-testid="queue-link">
      {queue}
    </a>
  );
}

/**
 * When a job that waits for its time runs: a queued job whose run time is
 * still ahead is scheduled (not yet claimable), a retrying one waits for its
 * next attempt. Nothing for any other job, or one already due.
 */
export function Due({ job, now = Date.now() }: { job: { status: string; runAt: string | null }; now?: number }) {
  if ((job.status !== "queued" && job.status !== "retrying") || !job.runAt) return null;
  const wait = new Date(job.runAt).getTime() - now;
  if (!(wait > 0)) return null;
  return (
    <>
      {job.status === "queued" ? (
        <>
          {" "}
          <span class="badge badge-scheduled" data-testid="scheduled">
            scheduled
          </span>
        </>
      ) : null}
      <div class="muted due" data-testid="run-at" title={formatTime(job.runAt)}>
        {job.status === "queued" ? "runs" : "next attempt"} in {formatDuration(wait)}
      </div>
    </>
  );
}
