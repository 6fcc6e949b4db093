/** The bodies of the API key admin API (`/-/keys`, docs/api-keys.md), in the OpenAPI 3.0 subset (see core/openapi/schema.ts). */
import { type TSchema, Type } from "@sinclair/typebox";
import { ref, StringEnum } from "../../../core/openapi/schema.ts";

const Strings = (description: string) => Type.Array(Type.String({ minLength: 1 }), { description });

const KeyLimits = Type.Object(
  {
    rate: Type.Integer({ minimum: 0, description: "Requests per period, any service type; 0 = off" }),
    period: Type.String({ description: 'Request window, e.g. "1m"', default: "1m" }),
    token_rate: Type.Integer({ minimum: 0, description: "LLM prompt + completion tokens per token_period; 0 = off" }),
    token_period: Type.String({ description: 'Token window, e.g. "1h"', default: "1m" }),
    cost_rate: Type.Number({
      minimum: 0,
      description: "Dollar budget: cost in pricing.currency per cost_period (LLM tokens and async processing time); 0 = off",
    }),
    cost_period: Type.String({ description: 'Cost budget window, e.g. "24h"', default: "24h" }),
  },
  { description: "The key's own limits, on top of rate_limits; null on PATCH removes them" },
);

const fields = {
  consumer: Type.String({ minLength: 1, description: "Who the key belongs to: limits, usage and job ownership are kept per consumer" }),
  user_type: Type.Optional(Type.String({ minLength: 1, description: "Selects the rate_limits entry; null on PATCH clears it" })),
  groups: Type.Optional(Strings("Groups, as visibility and policies read them")),
  roles: Type.Optional(Strings("Roles, as policies read them")),
  scopes: Type.Optional(Strings("Scopes, as policies read them")),
  models: Type.Optional(Strings("Model alias globs the key may use; others are 404 and absent from /v1/models for it. Empty: no restriction")),
  expires_at: Type.Optional(Type.String({ format: "date-time", description: "RFC 3339; after it the key is refused (401, expired). null on PATCH clears it" })),
  limits: Type.Optional(KeyLimits),
  metadata: Type.Optional(Type.Object({}, { additionalProperties: Type.String(), description: "Free string labels" })),
};

const stored = {
  id: Type.String({ description: "Stable across rotation" }),
  prefix: Type.String({ description: "The secret's visible part, gw-…abcd", example: "gw-…9fQx" }),
  ...fields,
  enabled: Type.Boolean(),
  status: StringEnum(["active", "disabled", "revoked"], {
    description: "active; disabled (enabled is false: refused until enabled again); revoked (for good)",
  }),
  created_at: Type.String({ format: "date-time" }),
  updated_at: Type.String({ format: "date-time" }),
  revoked_at: Type.Optional(Type.String({ format: "date-time" })),
  previous_valid_until: Type.Optional(Type.String({ format: "date-time", description: "After a rotation: until when the previous secret still works" })),
};

const Secret = Type.String({ description: "The key itself: shown only here, never again (the gateway stores only its HMAC)", example: "gw-3q2x…" });

export const keySchemas: Record<string, TSchema> = {
  KeyCreate: Type.Object({ ...fields, enabled: Type.Optional(Type.Boolean({ default: true })) }, { required: ["consumer"], description: "POST /-/keys" }),
  KeyUpdate: Type.Object({ ...fields, consumer: Type.Optional(fields.consumer), enabled: Type.Optional(Type.Boolean()) }, {
    description: "PATCH /-/keys/{id}: any field; the others stay",
  }),
  Key: Type.Object(stored, { description: "An API key, without its secret" }),
  KeyCreated: Type.Object({ ...stored, key: Secret }, { description: "The new key, with its secret (shown once)" }),
  KeyList: Type.Object({
    total: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 1, maximum: 100 }),
    offset: Type.Integer({ minimum: 0 }),
    keys: Type.Array(ref("Key")),
  }),
  KeyRotate: Type.Object({
    grace_period: Type.Optional(Type.String({ default: "1h", description: 'How long the old secret keeps working, e.g. "10m"; "0s": it stops at once' })),
  }),
  KeyRotated: Type.Object({ id: Type.String(), key: Secret, prefix: Type.String(), previous_valid_until: Type.String({ format: "date-time" }) }),
  KeyRevoked: Type.Object({ id: Type.String(), status: StringEnum(["revoked"]) }),
};
