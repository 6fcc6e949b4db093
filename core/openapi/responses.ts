/**
 * Shared responses: every error has the `Error` body, so each status is one component the
 * operations point at (`errors(400, 404)`), described once.
 */
import type { ResponseObject, ResponseOrRef, Schema } from "./types.ts";

export const schemaRef = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const errorBody = { "application/json": { schema: schemaRef("Error") } };

const ERRORS: Record<number, [name: string, description: string]> = {
  400: ["BadRequest", "The request is malformed; the message says what to fix"],
  401: [
    "Unauthorized",
    "Missing or invalid credentials: a bearer token (auth.mode oauth2), an API key (auth.mode api_key: the message says missing, malformed, unknown, expired, disabled or revoked), or the admin token on /-/*",
  ],
  403: ["Forbidden", "An access policy denies this caller the model; on /-/keys: no admin.token is configured"],
  404: ["NotFound", "Unknown path, job or model (a model hidden from the caller looks the same)"],
  409: ["Conflict", "The Idempotency-Key was used before and its job is gone"],
  413: ["TooLarge", "The body is larger than the configured cap"],
  415: ["UnsupportedMediaType", "An admin endpoint's JSON body was sent without Content-Type: application/json"],
  429: ["RateLimited", "A rate, token, concurrent-job or processing-time limit is exhausted"],
  500: ["InternalError", "The gateway failed; see its log"],
  501: ["NotImplemented", "The feature needs configuration that is missing (e.g. server.consumer_header)"],
  502: ["BadGateway", "The backend failed or could not be reached"],
  503: ["Unavailable", "All sync concurrency slots are busy, or a store is down"],
  504: ["GatewayTimeout", "The backend did not answer in time"],
};

export function componentResponses(): Record<string, ResponseObject> {
  const out: Record<string, ResponseObject> = {};
  for (const [status, [name, description]] of Object.entries(ERRORS)) {
    out[name] = { description, content: errorBody };
    if (Number(status) === 429) {
      out[name].headers = { "Retry-After": { description: "Seconds until the window resets", schema: { type: "integer" } } };
    }
  }
  return out;
}

/** References to the shared error responses for these statuses. */
export function errors(...statuses: number[]): Record<string, ResponseOrRef> {
  const out: Record<string, ResponseOrRef> = {};
  for (const status of statuses) {
    const entry = ERRORS[status];
    if (!entry) throw new Error(`no shared error response for HTTP ${status}`);
    out[String(status)] = { $ref: `#/components/responses/${entry[0]}` };
  }
  return out;
}

/** A JSON response with a component schema. */
export function jsonResponse(schema: string, description: string, headers?: ResponseObject["headers"]): ResponseObject {
  return { description, ...(headers ? { headers } : {}), content: { "application/json": { schema: schemaRef(schema) } } };
}

/** The same errors with the Messages API's error body, for the inbound Messages routes. */
export function messagesErrors(...statuses: number[]): Record<string, ResponseOrRef> {
  const out: Record<string, ResponseOrRef> = {};
  for (const status of statuses) {
    const entry = ERRORS[status];
    if (!entry) throw new Error(`no shared error response for HTTP ${status}`);
    out[String(status)] = { description: entry[1], content: { "application/json": { schema: schemaRef("MessagesError") } } };
  }
  return out;
}
