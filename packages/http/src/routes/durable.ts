import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { jobJson, sentEventJson, stepJson } from "conveyor-jobs/server";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { jsonResponse, problemResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { idParams, rerunBody, type SendEventBody, sendEventBody } from "../schemas.js";
import { actionScope, writeTenant } from "../tenancy.js";
import { routeSchema } from "../validation.js";

const RERUNNABLE = "409 when the job is not dead, sleeping, queued or retrying (a running, succeeded, cancelled or waiting job)";

/**
 * Durable execution over HTTP: send an event to the jobs waiting for it,
 * read a job's steps, resume a job keeping its steps, rerun it from one.
 * The rules are the library's (`conveyor.sendEvent`, `conveyor.steps`):
 * its NotFoundError answers 404, its ConflictError 409, its
 * ValidationError 422 naming the field.
 */
export function durableRoutes(app: FastifyInstance, { conveyor, metrics }: RouteContext): void {
  const tags = ["durable execution"];
  const params = routeSchema(idParams);

  app.post<{ Body: SendEventBody }>(
    "/events",
    {
      schema: {
        tags,
        operationId: "sendEvent",
        summary: "send an event: every job of the tenant whose waitForEvent waits for its name and key receives it and runs again",
        security: BEARER_SECURITY,
        body: routeSchema(sendEventBody),
        response: {
          200: jsonResponse("the stored event and the jobs it woke (a wait reached later takes it too)", responseSchemas.sentEvent),
          ...problemResponses(400, 401, 403, 413, 415, 422, 503),
        },
      },
    },
    async (request) => {
      const { tenant: requested, ...event } = request.body;
      const sent = await conveyor.sendEvent({ ...event, tenant: writeTenant(request, requested) });
      metrics.eventsSent.inc();
      metrics.eventsDelivered.inc(sent.jobIds.length);
      return sentEventJson(sent);
    },
  );

  app.get<{ Params: { id: string } }>(
    "/jobs/:id/steps",
    {
      schema: {
        tags,
        operationId: "listJobSteps",
        summary: "a job's steps, sleeps and waits, in the order it first recorded them (none for a job that is not durable)",
        security: BEARER_SECURITY,
        params,
        response: { 200: jsonResponse("the job's records", responseSchemas.steps), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request) => ({ items: (await conveyor.steps.list(request.params.id, actionScope(request))).map(stepJson) }),
  );

  app.post<{ Params: { id: string } }>(
    "/jobs/:id/resume",
    {
      schema: {
        tags,
        operationId: "resumeJob",
        summary: "run a job again keeping every recorded step: a dead job leaves the dead-letter queue with fresh attempts and replays its steps",
        security: BEARER_SECURITY,
        params,
        response: {
          200: jsonResponse("the job, queued again", responseSchemas.job),
          ...problemResponses(400, 401, 404, 503),
          ...problemResponse(409, RERUNNABLE),
        },
      },
    },
    async (request) => jobJson(await conveyor.steps.resume(request.params.id, actionScope(request))),
  );

  app.post<{ Params: { id: string }; Body: z.output<typeof rerunBody> }>(
    "/jobs/:id/rerun",
    {
      schema: {
        tags,
        operationId: "rerunJobFromStep",
        summary: "run a job again from one of its steps: that record and every later one are forgotten, earlier ones replay",
        security: BEARER_SECURITY,
        params,
        body: routeSchema(rerunBody),
        response: {
          200: jsonResponse("the job, queued again", responseSchemas.job),
          ...problemResponses(400, 401, 413, 415, 422, 503),
          ...problemResponse(404, "no such job (or another tenant's), or the job has no step of that name"),
          ...problemResponse(409, RERUNNABLE),
        },
      },
    },
    async (request) => jobJson(await conveyor.steps.rerunFrom(request.params.id, request.body.fromStep, actionScope(request))),
  );
}
