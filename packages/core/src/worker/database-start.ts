import type { Logger } from "pino";
import type { Queryable } from "../store/db.js";
import { waitForDatabase } from "../store/database-wait.js";
import type { WorkerLoopTestSignals } from "./test-signals.js";

/**
 * A worker's wait for its database before it starts (store/database-wait.ts):
 * one warning per failed try, with its error code, the try's number and the
 * next wait, and one line when the database answers after failed tries.
 * Resolves true when it answered, false when `signal` aborted (the worker
 * was stopped meanwhile); throws what waiting cannot mend.
 */
export async function waitToStart(db: Queryable, signal: AbortSignal, log: Logger, testSignals: WorkerLoopTestSignals): Promise<boolean> {
  let tries = 0;
  const ready = await waitForDatabase(db, {
    signal,
    onWait: ({ attempt, code, message, retryInMs }) => {
      tries = attempt;
      log.warn({ code, err: message, attempt, retryInMs }, "waiting for the database");
      testSignals.databaseWait.signal({ attempt, code, retryInMs });
    },
  });
  if (ready && tries > 0) log.info({ tries: tries + 1 }, "the database answers; starting");
  return ready;
}
