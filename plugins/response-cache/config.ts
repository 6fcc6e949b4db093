/**
 * The response cache's settings: `services[i].response_cache_ttl` (how long an LLM answer of
 * the service is served from the cache), and its fields in sections it shares: `llm.coalesce`,
 * `llm.cache_key` and `llm.cache_streams` (they live where the LLM traffic's settings are), and `redis.embedded_cache_max_mb`
 * (the embedded store's cap on cached answers, read by the store opener at start).
 */
import { type Static, Type } from "@sinclair/typebox";
import type { SectionFieldSet, ServiceFieldSet } from "../../core/config/schema.ts";

export const CacheServiceFields = Type.Object({
  response_cache_ttl: Type.Integer({ minimum: 0, default: 0, description: "LLM response cache seconds; 0 = off" }),
});

declare module "../../core/config/schema.ts" {
  interface ServiceFields extends Static<typeof CacheServiceFields> {}
}

export const cacheServiceFields: ServiceFieldSet<typeof CacheServiceFields> = { schema: CacheServiceFields };

export const CacheLlmFields = Type.Object(
  {
    coalesce: Type.Boolean({
      default: true,
      description:
        "In-flight coalescing where the response cache is on: identical cacheable requests that arrive while the first is at the backend wait for its answer instead of calling the backend too",
    }),
    cache_key: Type.Union([Type.Literal("spec"), Type.Literal("full")], {
      default: "spec",
      description:
        "What the response cache keys a chat request on: spec = the spec's subset (model, messages, system, temperature, top_p, stop, tools, tool_choice), so requests that differ only in n, max_tokens, response_format, seed, logprobs or penalties share an answer; full = every field of the body, key order aside, but those that cannot change the answer (user, safety_identifier, metadata, store, prompt_cache_key, keep_alive; stream and stream_options key a stream apart)",
    }),
    cache_streams: Type.Boolean({
      default: false,
      description:
        "Where the response cache is on, store streamed answers that end complete (their events as the client got them, up to 1 MiB) and replay them as a stream to identical streamed requests; false = the spec's behaviour (streams bypass the cache)",
    }),
  },
  {
    notes:
      "See [Coalescing](llm-proxy.md#coalescing) for `coalesce`, [Cache key](llm-proxy.md#cache-key) for `cache_key` and [Streamed answers](llm-proxy.md#streamed-answers) for `cache_streams`.",
  },
);

export const cacheLlmFields: SectionFieldSet<typeof CacheLlmFields> = { section: "llm", schema: CacheLlmFields };

export const EmbeddedCacheFields = Type.Object(
  {
    embedded_cache_max_mb: Type.Number({
      minimum: 0,
      default: 64,
      description:
        "Embedded store only (addr empty), read at start: cap in MiB of the cached LLM answers (key + text + 300 bytes each), least recently used dropped first; 0 = no cap",
    }),
  },
  {
    notes:
      "`embedded_cache_max_mb`: the process holds about 2.5-3.5x the cap for the cached answers; on Redis, see [Response cache](llm-proxy.md#response-cache).",
  },
);

/** `redis.embedded_cache_max_mb`: the store is opened once, at start. */
export const embeddedCacheFields: SectionFieldSet<typeof EmbeddedCacheFields> = {
  section: "redis",
  schema: EmbeddedCacheFields,
  restartOnly: ["embedded_cache_max_mb"],
};
