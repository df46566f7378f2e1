import { useMemo, useState } from "preact/hooks";
import { Api } from "./api.js";
import { BulkActionPage, BulkActions } from "./components/bulk-actions.js";
import { DeadLetterPage, DeadLetters } from "./components/dead-letters.js";
import { FlowPage, Flows } from "./components/flows.js";
import { JobPage } from "./components/job.js";
import { Jobs } from "./components/jobs.js";
import { KeyLimitsPage } from "./components/key-limits.js";
import { Overview } from "./components/overview.js";
import { QueuePage } from "./components/queue.js";
import { SignIn } from "./components/sign-in.js";
import { usePoll } from "./poll.js";
import { href, useRoute } from "./router.js";
import { forgetKey, loadKey, saveKey } from "./session.js";
import type { CurrentKey } from "./types.js";

export function App() {
  const [key, setKey] = useState<string | null>(() => loadKey());
  const [signedOutReason, setSignedOutReason] = useState<string | null>(null);
  const route = useRoute();
  const api = useMemo(
    () =>
      key
        ? new Api(key, () => {
            forgetKey();
            setSignedOutReason("The API no longer accepts this key (revoked?). Sign in again.");
            setKey(null);
          })
        : null,
    [key],
  );

  // What the key may do, read once per sign-in: pages offer admin-only routes to admin keys only.
  const me = usePoll<CurrentKey | null>(async () => (api ? api.get<CurrentKey>("/v1/me") : null), null, [api], "me");
  const admin = me.data ? me.data.admin : null;

  if (!api || !key) {
    return (
      <SignIn
        reason={signedOutReason}
        onSignedIn={(accepted) => {
          saveKey(accepted);
          setSignedOutReason(null);
          setKey(accepted);
        }}
      />
    );
  }

  const [section = "", id] = route.path;
  let page;
  if (section === "jobs" && id) page = <JobPage key={id} api={api} id={id} />; // keyed: another job never shows the last one's data while it loads
  else if (section === "jobs") page = <Jobs api={api} route={route} />;
  else if (section === "flows" && id) page = <FlowPage key={id} api={api} id={id} />;
  else if (section === "flows") page = <Flows api={api} route={route} />;
  else if (section === "dead-letters" && id) page = <DeadLetterPage key={id} api={api} id={id} />;
  else if (section === "dead-letters") page = <DeadLetters api={api} route={route} />;
  else if (section === "bulk-actions" && id) page = <BulkActionPage key={id} api={api} id={id} />;
  else if (section === "bulk-actions") page = <BulkActions api={api} route={route} />;
  else if (section === "queues" && id) page = <QueuePage key={id} api={api} name={id} admin={admin} />;
  else if (section === "key-limits") page = <KeyLimitsPage api={api} admin={admin} />;
  else page = <Overview api={api} admin={admin} />;

  const link = (to: string, label: string, active: boolean) => (
    <a href={href(to)} class={active ? "active" : undefined} aria-current={active ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <>
      <nav class="top">
        <span class="brand">Conveyor</span>
        {link("/", "Overview", section === "")}
        {link("/jobs", "Jobs", section === "jobs")}
        {link("/flows", "Flows", section === "flows")}
        {link("/dead-letters", "Dead letters", section === "dead-letters")}
        {link("/bulk-actions", "Bulk actions", section === "bulk-actions")}
        {admin === true ? link("/key-limits", "Limits per key", section === "key-limits") : null}
        <span class="spacer" />
        <span class="muted key-hint" title="signed in with this API key">
          {key.slice(0, 12)}…
        </span>
        <button
          type="button"
          class="link"
          onClick={() => {
            forgetKey();
            setKey(null);
          }}
        >
          Sign out
        </button>
      </nav>
      <main class="content">{page}</main>
    </>
  );
}
