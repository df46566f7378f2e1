import type { FastifyInstance, RouteHandlerMethod } from "fastify";

/**
 * When a request times out, Fastify answers 503 while the handler goes on
 * (a statement already sent to PostgreSQL runs to its end). Its late result
 * or error has nobody to go to: drop it quietly (a debug line for a result,
 * an info line for an error), instead of letting Fastify log "reply already
 * sent" warnings and errors for a request that was answered correctly.
 */
export function installLateResultGuard(app: FastifyInstance): void {
  app.addHook("onRoute", (route) => {
    const handler = route.handler as RouteHandlerMethod;
    route.handler = async function guarded(this: FastifyInstance, request, reply) {
      try {
        const result: unknown = await handler.call(this, request, reply);
        if (!reply.sent) return result;
        request.log.debug("request finished after its answer was sent; its result is dropped");
        return undefined;
      } catch (error) {
        if (!reply.sent) throw error;
        request.log.info({ err: error }, "request finished with an error after its answer was sent");
        return undefined;
      }
    };
  });
}
