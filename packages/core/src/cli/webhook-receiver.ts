import { createHmac, timingSafeEqual } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Logger } from "pino";

/** Largest webhook body the receiver reads. */
const MAX_BODY_BYTES = 1024 * 1024;
/** Deliveries signed longer ago than this are refused as possible replays. */
const MAX_AGE_SECONDS = 5 * 60;

export interface WebhookReceiver {
  /** e.g. `http://127.0.0.1:41234`; deliveries go to `<url>/hooks/<name>`. */
  url: string;
  close(): Promise<void>;
}

/**
 * The local endpoint `conveyor dev` starts so the example webhook job has
 * somewhere real to POST: it checks each delivery's signature (HMAC-SHA256
 * in the style of Standard Webhooks; see examples/webhook.ts), refuses stale
 * or badly signed ones with 401, and saves each good one as
 * `<dir>/<webhook-id>.json`.
 *
 * `/hooks/flaky` answers 503 to the first delivery of each webhook id and
 * 200 to the next, so the demo shows a retry in the job's timeline.
 */
export async function startWebhookReceiver(options: { secret: string; dir: string; log: Logger; port?: number }): Promise<WebhookReceiver> {
  const seenFlaky = new Set<string>();
  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      options.log.error({ err: error }, "webhook receiver failed");
      if (!response.headersSent) answer(response, 500, "receiver error");
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "/").split("?")[0]!;
    const match = /^\/hooks\/([A-Za-z0-9_-]{1,64})$/.exec(path);
    if (request.method !== "POST" || !match) return answer(response, 404, "POST /hooks/<name>");
    const body = await readBody(request);
    if (body === null) return answer(response, 413, "body too large");
    const id = header(request, "webhook-id");
    const timestamp = Number(header(request, "webhook-timestamp"));
    const signature = header(request, "webhook-signature");
    if (!id || !/^[A-Za-z0-9_.:-]{1,128}$/.test(id) || !Number.isInteger(timestamp) || !signature) {
      return answer(response, 401, "missing webhook-id, webhook-timestamp or webhook-signature");
    }
    if (Math.abs(Date.now() / 1000 - timestamp) > MAX_AGE_SECONDS) return answer(response, 401, "stale timestamp");
    if (!signatureMatches(options.secret, id, timestamp, body, signature)) {
      options.log.warn({ webhookId: id, hook: match[1] }, "webhook refused: bad signature");
      return answer(response, 401, "bad signature");
    }
    if (match[1] === "flaky" && !seenFlaky.has(id)) {
      seenFlaky.add(id);
      options.log.info({ webhookId: id }, "webhook receiver: answering 503 once (flaky hook)");
      return answer(response, 503, "try again");
    }
    await mkdir(options.dir, { recursive: true });
    const file = join(options.dir, `${id.replace(/[^A-Za-z0-9_-]/g, "_")}.json`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      return answer(response, 400, "body is not JSON");
    }
    await writeFile(file, `${JSON.stringify({ receivedAt: new Date().toISOString(), hook: match[1], webhookId: id, body: parsed }, null, 2)}\n`);
    options.log.info({ webhookId: id, hook: match[1], file }, "webhook received and verified");
    answer(response, 200, "ok");
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `v1,<base64>` entries (space-separated, as Standard Webhooks allows several), any of which may match. */
function signatureMatches(secret: string, id: string, timestamp: number, body: Buffer, header: string): boolean {
  const expected = createHmac("sha256", secret).update(`${id}.${timestamp}.`).update(body).digest();
  return header.split(" ").some((entry) => {
    const [version, value] = entry.split(",", 2);
    if (version !== "v1" || !value) return false;
    const given = Buffer.from(value, "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function readBody(request: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function answer(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(`${text}\n`);
}
