import type { Api } from "../api.js";
import { shortId } from "../format.js";
import { usePoll } from "../poll.js";
import { href } from "../router.js";
import type { DependencyLinkJson, JobDependencies } from "../types.js";
import { Badge } from "./common.js";

const REFRESH_MS = 2_000;

/** A job's flow, the jobs it waits for (parents) and the jobs waiting for it (children), each a link; nothing when it has none. */
export function JobLinks({ api, id }: { api: Api; id: string }) {
  const { data } = usePoll(() => api.get<JobDependencies>(`/v1/jobs/${encodeURIComponent(id)}/dependencies`), REFRESH_MS, [api, id], "job-links");
  if (!data || (data.flowId === null && data.dependencies.length === 0 && data.dependents.length === 0)) return null;
  return (
    <>
      <h2>Dependencies</h2>
      {data.flowId ? (
        <p data-testid="job-flow">
          Node <strong>{data.node}</strong> of <a href={href(`/flows/${data.flowId}`)}>flow {shortId(data.flowId)}</a>
          {data.counts ? <span class="muted"> · {data.counts.pending} pending, {data.counts.failed} failed</span> : null}
        </p>
      ) : null}
      <LinkList title="Waits for" testid="job-parents" links={data.dependencies} />
      <LinkList title="Waited on by" testid="job-children" links={data.dependents} />
    </>
  );
}

function LinkList({ title, testid, links }: { title: string; testid: string; links: DependencyLinkJson[] }) {
  return (
    <div data-testid={testid}>
      <h3>{title}</h3>
      {links.length === 0 ? (
        <p class="muted">none</p>
      ) : (
        <ul class="job-links">
          {links.map((link) => (
            <li key={link.jobId} data-job-id={link.jobId}>
              <a href={href(`/jobs/${link.jobId}`)}>{link.node ?? shortId(link.jobId)}</a> <Badge value={link.status} />{" "}
              <span class="muted">
                {link.kind} · on failure: {link.onFailure}
              </span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
