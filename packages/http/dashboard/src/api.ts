/**
 * The dashboard's one way to the API: `fetch` with the bearer key, JSON in
 * and out, and problem+json answers turned into `ApiError`s that carry the
 * server's `detail`.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export interface ApiResponse<T> {
  status: number;
  body: T;
}

export class Api {
  constructor(
    private readonly key: string,
    private readonly onUnauthorized: () => void,
  ) {}

  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path).then((response) => response.body);
  }

  post<T>(path: string): Promise<ApiResponse<T>> {
    return this.request<T>("POST", path);
  }

  /** POST with a JSON body. */
  postJson<T>(path: string, body: unknown): Promise<ApiResponse<T>> {
    return this.request<T>("POST", path, body);
  }

  delete(path: string): Promise<ApiResponse<undefined>> {
    return this.request<undefined>("DELETE", path);
  }

  private async request<T>(method: string, path: string, json?: unknown): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}`, accept: "application/json" };
    if (json !== undefined) headers["content-type"] = "application/json";
    let response: Response;
    try {
      response = await fetch(path, { method, headers, body: json === undefined ? undefined : JSON.stringify(json), cache: "no-store" });
    } catch {
      throw new ApiError(0, "NETWORK", "the API is unreachable");
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (!response.ok) {
      const problem = (body ?? {}) as { code?: unknown; detail?: unknown };
      const error = new ApiError(
        response.status,
        typeof problem.code === "string" ? problem.code : "HTTP",
        typeof problem.detail === "string" ? problem.detail : `HTTP ${response.status}`,
      );
      if (response.status === 401) this.onUnauthorized();
      throw error;
    }
    return { status: response.status, body: body as T };
  }
}

/** Check a key by reading the queue overview: resolves when the API accepts it. */
export async function checkKey(key: string): Promise<void> {
  await new Api(key, () => {}).get("/v1/queues");
}

/** `?a=1&b=2` from the set values of an object. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : "";
}
