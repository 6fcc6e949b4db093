/**
 * The cache key (spec 4.6 "Caching"): SHA-256 over the canonical JSON of what decides the
 * answer. That is the service type and the request path with its query (two services, or two
 * paths of one wildcard operation, never answer each other's requests), then the body:
 *
 * - a chat request (it has `messages`): the spec's subset, `model` (the client-facing alias,
 *   never the backend model: the alias is what the client asked for, whichever backend answers
 *   it), `messages`, `system`, `temperature`, `top_p`, `stop`, `tools`, `tool_choice`; `user`,
 *   `metadata` and anything not listed do not change the key; an inbound Messages request adds
 *   its own `stop_sequences`, `top_k` and `thinking`;
 * - any other body (embeddings `input`, completions `prompt`, a passthrough backend's own
 *   format): the whole body, since the gateway cannot know which of its fields matter, with
 *   `model` as the alias and without the fields that never change an answer (`user`,
 *   `metadata`, `stream`, `stream_options`).
 */
import type { JsonObject } from "../../core/llm/provider.ts";
import { sha256Hex } from "../../core/crypto/sha256.ts";
import { EVICTABLE_PREFIX } from "../../core/stores/kv.ts";
import { canonicalJson } from "./canonical.ts";

// The spec's subset, then the Messages API's fields that change an answer (`POST /v1/messages`
// bodies; chat bodies never carry them, so chat keys are the spec's).
export const KEY_FIELDS = ["messages", "system", "temperature", "top_p", "stop", "tools", "tool_choice", "stop_sequences", "top_k", "thinking"] as const;

/** Left out of the key of a body that is not a chat request (`model` is replaced by the alias). */
const IGNORED_FIELDS = new Set(["model", "user", "metadata", "stream", "stream_options"]);

/** Key prefix in the KV store; the full key is `cache:llm:<sha256 hex>` (evictable: see core/stores/kv.ts). */
export const CACHE_PREFIX = `${EVICTABLE_PREFIX}llm:`;

/** Where the request went: the service type and the path with its query (`/v1/x?q=1`); whether it streams. */
export interface KeyScope {
  serviceType: string;
  pathAndQuery: string;
  /** A streamed answer (stored events) never answers a non-streamed request, nor the reverse; its `stream_options` count. */
  stream?: boolean;
}

export function keySubset(alias: string, body: JsonObject): JsonObject {
  if (body.messages === undefined) {
    // No prototype: a body field named "__proto__" is kept as a field, not taken as one.
    const whole = Object.create(null) as JsonObject;
    whole.model = alias;
    for (const field of Object.keys(body)) if (!IGNORED_FIELDS.has(field)) whole[field] = body[field];
    return whole;
  }
  const subset: JsonObject = { model: alias };
  for (const field of KEY_FIELDS) if (body[field] !== undefined) subset[field] = body[field];
  return subset;
}

/** Synchronous: WebCrypto's digest is async and costs ~30 µs a call on Node (see core/crypto/sha256.ts). */
export function cacheKey(scope: KeyScope, alias: string, body: JsonObject): string {
  // An array, so the scope can never be confused with a body field of the same name.
  const parts: unknown[] = [scope.serviceType, scope.pathAndQuery, keySubset(alias, body)];
  // Appended only for streams, so the keys of non-streamed answers stay what they were. A
  // stream's events depend on its `stream_options` (the usage chunk, for one).
  if (scope.stream) parts.push("stream", body.stream_options ?? null);
  return `${CACHE_PREFIX}${sha256Hex(canonicalJson(parts))}`;
}
