import type { FastifyRequest } from "fastify";
import type { ApiKeys } from "conveyor-jobs/server";
import { HttpProblem } from "./problem.js";

/** Who is calling: the API key's id, tenant and whether it is an admin key. */
export interface Principal {
  keyId: string;
  tenant: string;
  admin: boolean;
}

// Kept beside the request rather than as a Fastify request decoration, so
// Conveyor does not change the Fastify types of an application that embeds it.
const principals = new WeakMap<FastifyRequest, Principal>();

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;
const CHALLENGE = 'Bearer realm="conveyor"';

/**
 * An `onRequest` hook: authenticate `Authorization: Bearer <key>` before the
 * body is read, so unauthenticated callers cost no parsing. Missing,
 * malformed, unknown and revoked keys all get 401; the detail does not say
 * whether a key exists.
 */
export function authenticateWith(keys: ApiKeys) {
  return async (request: FastifyRequest): Promise<void> => {
    const header = request.headers.authorization;
    if (header === undefined || header === "") {
      throw new HttpProblem(401, "UNAUTHORIZED", "missing Authorization header; send Authorization: Bearer <API key>", {
        headers: { "www-authenticate": CHALLENGE },
      });
    }
    const match = BEARER.exec(header);
    if (!match) {
      throw new HttpProblem(401, "UNAUTHORIZED", "Authorization header must be Bearer <API key>", {
        headers: { "www-authenticate": `${CHALLENGE}, error="invalid_request"` },
      });
    }
    const record = await keys.authenticate(match[1]!);
    if (!record) {
      throw new HttpProblem(401, "UNAUTHORIZED", "the API key is not valid or has been revoked", {
        headers: { "www-authenticate": `${CHALLENGE}, error="invalid_token"` },
      });
    }
    principals.set(request, { keyId: record.id, tenant: record.tenant, admin: record.admin });
  };
}

/** The authenticated caller of a `/v1` request. */
export function principalOf(request: FastifyRequest): Principal {
  const principal = principals.get(request);
  if (!principal) throw new Error("principalOf called on a request that was not authenticated");
  return principal;
}
