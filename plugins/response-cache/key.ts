/**
 * The cache key (spec 4.6 "Caching"): SHA-256 over the canonical JSON of the subset of the
 * request that decides the answer. `model` is the client-facing alias, never the backend
 * model: the alias is what the client asked for, whichever backend answers it. `user`,
 * `metadata` and anything not listed do not change the key.
 */
import type { JsonObject } from "../../core/llm/provider.ts";
import { sha256Hex } from "../../core/crypto/sha256.ts";
import { EVICTABLE_PREFIX } from "../../core/stores/kv.ts";
import { canonicalJson } from "./canonical.ts";

export const KEY_FIELDS = ["messages", "system", "temperature", "top_p", "stop", "tools", "tool_choice"] as const;

/** Key prefix in the KV store; the full key is `cache:llm:<sha256 hex>` (evictable: see core/stores/kv.ts). */
export const CACHE_PREFIX = `${EVICTABLE_PREFIX}llm:`;

export function keySubset(alias: string, body: JsonObject): JsonObject {
  const subset: JsonObject = { model: alias };
  for (const field of KEY_FIELDS) if (body[field] !== undefined) subset[field] = body[field];
  return subset;
}

/** Synchronous: WebCrypto's digest is async and costs ~30 µs a call on Node (see core/crypto/sha256.ts). */
export function cacheKey(alias: string, body: JsonObject): string {
  return `${CACHE_PREFIX}${sha256Hex(canonicalJson(keySubset(alias, body)))}`;
}
