import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import type { PoolClient } from "./db.js";

/**
 * Stream `chunks` into the table as COPY statements of at most
 * `statementRows` rows each, on `client` (inside the caller's transaction).
 * Each chunk is encoded by `encode` and handed to the connection as soon as
 * `chunks` yields it, with a turn of the event loop before the next is asked
 * for: whatever work the caller does to produce a chunk (validating it, say)
 * runs while the server inserts the ones before it, and so does `sent`,
 * called with each chunk once it has been handed over (to build what the
 * caller returns, say). When `chunks` throws, the COPY is abandoned
 * (CopyFail) and the error is rethrown; the caller's transaction is then
 * aborted and must be rolled back.
 */
export async function copyIn<T>(
  client: PoolClient,
  statement: string,
  chunks: AsyncIterable<readonly T[]>,
  encode: (rows: readonly T[]) => string,
  sent: (rows: readonly T[]) => void,
  statementRows: number,
): Promise<void> {
  const iterator = chunks[Symbol.asyncIterator]();
  // The first COPY is sent before its first chunk is ready: the server's
  // answer to it comes back while the caller produces that chunk.
  let next: IteratorResult<readonly T[]> | undefined;
  let inputLeft = true;
  async function* statementText(): AsyncGenerator<string> {
    next ??= await iterator.next();
    let rows = 0;
    while (!next.done && (rows === 0 || rows + next.value.length <= statementRows)) {
      const chunk = next.value;
      rows += chunk.length;
      yield encode(chunk);
      sent(chunk);
      // Producing a chunk is all microtasks (validation included): without a
      // turn of the event loop here the connection would not send a byte
      // until every chunk of the statement was ready, and nothing overlaps.
      await new Promise((resolve) => setImmediate(resolve));
      next = await iterator.next();
    }
    inputLeft = !next.done;
  }
  while (inputLeft) await pipeline(Readable.from(statementText()), client.query(copyFrom(statement)));
}
