import { useEffect, useState } from "preact/hooks";

/** A hash route: `#/jobs/<id>?x=1` → { path: ["jobs", "<id>"], params }. */
export interface Route {
  path: string[];
  params: URLSearchParams;
}

function parse(hash: string): Route {
  const [path = "", search = ""] = hash.replace(/^#\/?/, "").split("?", 2);
  return { path: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(search) };
}

/** The current route, updated on navigation. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parse(window.location.hash));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

/** `#/a/b?x=1` for a link. */
export function href(path: string, params?: Record<string, string | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params ?? {})) if (value) search.set(name, value);
  const text = search.toString();
  return `#${path}${text ? `?${text}` : ""}`;
}

export function navigate(to: string): void {
  window.location.hash = to.replace(/^#/, "");
}
