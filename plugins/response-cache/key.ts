/**
 * The cache key (docs/design.md#response-cache): SHA-256 over the canonical JSON of what decides
 * the answer. That is the service type and the request path with its query (two services, or two
 * paths of one wildcard operation, never answer each other's requests), then the body:
 *
 * - a chat request (it has `messages`) with `llm.cache_key: spec` (the default): the spec's
 *   subset, `model` (the client-facing alias, never the backend model: the alias is what the
 *   client asked for, whichever backend answers it), `messages`, `system`, `temperature`,
 *   `top_p`, `stop`, `tools`, `tool_choice`; `user`, `metadata` and anything not listed do not
 *   change the key; an inbound Messages request adds its own `stop_sequences`, `top_k` and
 *   `thinking`;
 * - any other body (embeddings `input`, completions `prompt`, a passthrough backend's own
 *   format), and every body with `llm.cache_key: full`: the whole body, since `n`,
 *   `max_tokens`, `response_format`, `seed`, `logprobs`, penalties and fields the gateway has
 *   never heard of all change an answer, with `model` as the alias and without the fields that
 *   never do (`NEVER_CHANGE_THE_ANSWER`).
 */
import type { JsonObject } from "../../core/llm/provider.ts";
import { sha256Hex } from "../../core/crypto/sha256.ts";
import { EVICTABLE_PREFIX } from "../../core/stores/kv.ts";
import { canonicalJson } from "./canonical.ts";

// The spec's subset, then the Messages API's fields that change an answer (`POST /v1/messages`
// bodies; chat bodies never carry them, so chat keys are the spec's).
export const KEY_FIELDS = ["messages", "system", "temperature", "top_p", "stop", "tools", "tool_choice", "stop_sequences", "top_k", "thinking"] as const;

/**
 * Left out of a whole-body key. `model` is replaced by the alias and `stream` is in the key's
 * scope; the others tell the provider who asked (`user`, `safety_identifier`, `metadata`), what
 * to keep (`store`: the provider's record of the answer; `keep_alive`: how long a local runtime
 * keeps the model loaded), where its prompt cache is (`prompt_cache_key`) or what a stream
 * carries (`stream_options`, in a stream's scope): none changes the text of an answer.
 */
export const NEVER_CHANGE_THE_ANSWER: ReadonlySet<string> = new Set([
  "model",
  "stream",
  "stream_options",
  "user",
  "safety_identifier",
  "metadata",
  "store",
  "prompt_cache_key",
  "keep_alive",
]);

/** `llm.cache_key`: the spec's subset of a chat request, or all of every request. */
export type KeyFields = "spec" | "full";

/** Key prefix in the KV store; the full key is `cache:llm:<sha256 hex>` (evictable: see core/stores/kv.ts). */
export const CACHE_PREFIX = `${EVICTABLE_PREFIX}llm:`;

/** Where the request went: the service type and the path with its query (`/v1/x?q=1`); whether it streams. */
export interface KeyScope {
  serviceType: string;
  pathAndQuery: string;
  /** A streamed answer (stored events) never answers a non-streamed request, nor the reverse; its `stream_options` count. */
  stream?: boolean;
}

export function keySubset(alias: string, body: JsonObject, fields: KeyFields = "spec"): JsonObject {
  if (fields === "full" || body.messages === undefined) {
    // No prototype: a body field named "__proto__" is kept as a field, not taken as one.
    const whole = Object.create(null) as JsonObject;
    whole.model = alias;
    for (const field of Object.keys(body)) if (!NEVER_CHANGE_THE_ANSWER.has(field)) whole[field] = body[field];
    return whole;
  }
  const subset: JsonObject = { model: alias };
  for (const field of KEY_FIELDS) if (body[field] !== undefined) subset[field] = body[field];
  return subset;
}

/** Synchronous: WebCrypto's digest is async and costs ~30 µs a call on Node (see core/crypto/sha256.ts). */
export function cacheKey(scope: KeyScope, alias: string, body: JsonObject, fields: KeyFields = "spec"): string {
  // An array, so the scope can never be confused with a body field of the same name.
  const parts: unknown[] = [scope.serviceType, scope.pathAndQuery, keySubset(alias, body, fields)];
  // Appended only for streams, so the keys of non-streamed answers stay what they were. A
  // stream's events depend on its `stream_options` (the usage chunk, for one).
  if (scope.stream) parts.push("stream", body.stream_options ?? null);
  return `${CACHE_PREFIX}${sha256Hex(canonicalJson(parts))}`;
}
