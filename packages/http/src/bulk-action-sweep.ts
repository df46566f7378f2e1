import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { ConveyorClient } from "conveyor-jobs";

/**
 * Resume the bulk actions whose process is gone (its lease lapsed, or it
 * let go at close), once when the app is ready and then every `intervalMs`
 * (each wait ±25%): an API server is the one long-lived process an operator
 * can count on. Any number of servers may sweep at once; each operation is
 * taken by one. The walks run in the client, which stops them at its
 * `close()`; closing the app only stops the sweeps. 0 turns it off.
 */
export function installBulkActionSweep(app: FastifyInstance, conveyor: ConveyorClient, logger: Logger, intervalMs: number): void {
  if (intervalMs === 0) return;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let sweeping: Promise<void> = Promise.resolve();
  const sweep = () => {
    sweeping = conveyor
      .bulkActions.resume()
      .then(
        (taken) => {
          if (taken.length > 0) logger.info({ bulkActionIds: taken.map((operation) => operation.id) }, "resumed bulk actions whose process was gone");
        },
        (error: unknown) => logger.warn({ err: error }, "the bulk action resume sweep failed; the next one tries again"),
      )
      .finally(() => {
        if (closed) return;
        timer = setTimeout(sweep, intervalMs * (0.75 + Math.random() * 0.5));
        timer.unref();
      });
  };
  app.addHook("onReady", async () => sweep());
  app.addHook("onClose", async () => {
    closed = true;
    clearTimeout(timer);
    await sweeping;
  });
}
