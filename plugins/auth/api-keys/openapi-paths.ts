/** `/-/keys`, the API key admin API (docs/api-keys.md), documented when this runtime serves it. */
import type { DocInput } from "../../../core/openapi/input.ts";
import { errors, jsonResponse, schemaRef } from "../../../core/openapi/responses.ts";
import type { Parameter, Paths } from "../../../core/openapi/types.ts";

const ADMIN = "Needs the admin token (Authorization: Bearer <admin.token>); 403 when admin.token is not configured. Every change is audited.";
const id: Parameter = { name: "id", in: "path", required: true, schema: { type: "string" } };
const body = (schema: string, required = true) => ({ required, content: { "application/json": { schema: schemaRef(schema) } } });

export function keyPaths(input: DocInput): Paths {
  if (!input.served("post", "/-/keys")) return {};
  return {
    "/-/keys": {
      post: {
        operationId: "create_key",
        summary: "Issue an API key",
        description: `The answer is the only time the secret is shown. ${ADMIN}`,
        tags: ["Admin", "Keys"],
        requestBody: body("KeyCreate"),
        responses: { "201": jsonResponse("KeyCreated", "The key, with its secret"), ...errors(400, 401, 403, 413, 415) },
      },
      get: {
        operationId: "list_keys",
        summary: "List API keys (oldest first, no secrets)",
        description: ADMIN,
        tags: ["Admin", "Keys"],
        parameters: [
          { name: "consumer", in: "query", description: "Only this consumer's keys", schema: { type: "string" } },
          { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: 100, default: 20 } },
          { name: "offset", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
        ],
        responses: { "200": jsonResponse("KeyList", "A page of keys"), ...errors(400, 401, 403) },
      },
    },
    "/-/keys/{id}": {
      get: {
        operationId: "get_key",
        summary: "One API key (no secret)",
        description: ADMIN,
        tags: ["Admin", "Keys"],
        parameters: [id],
        responses: { "200": jsonResponse("Key", "The key"), ...errors(401, 403, 404) },
      },
      patch: {
        operationId: "update_key",
        summary: "Change a key's fields, limits, models, expiry, or enable / disable it",
        description: `Applies on this replica at once, on the others within auth.api_key.cache_ttl. A revoked key cannot be changed (409). ${ADMIN}`,
        tags: ["Admin", "Keys"],
        parameters: [id],
        requestBody: body("KeyUpdate"),
        responses: { "200": jsonResponse("Key", "The key as changed"), ...errors(400, 401, 403, 404, 409, 413, 415) },
      },
      delete: {
        operationId: "revoke_key",
        summary: "Revoke a key for good",
        description:
          `Its secrets (the previous one of a rotation too) are refused with 401 revoked: on this replica at once, on the others within auth.api_key.cache_ttl. ${ADMIN}`,
        tags: ["Admin", "Keys"],
        parameters: [id],
        responses: { "200": jsonResponse("KeyRevoked", "Revoked"), ...errors(401, 403, 404) },
      },
    },
    "/-/keys/{id}/rotate": {
      post: {
        operationId: "rotate_key",
        summary: "Give a key a new secret",
        description: `The old secret keeps working until previous_valid_until (grace_period, default 1h); a secret rotated out earlier stops at once. ${ADMIN}`,
        tags: ["Admin", "Keys"],
        parameters: [id],
        requestBody: body("KeyRotate", false),
        responses: { "200": jsonResponse("KeyRotated", "The new secret"), ...errors(400, 401, 403, 404, 409, 415) },
      },
    },
  };
}
