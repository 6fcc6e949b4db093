/**
 * The `responseCache` service the LLM proxy uses when a cache plugin provides one
 * (docs/design.md#response-cache). The contract keeps every cache rule (key, bypass, TTL, what may
 * be stored) on the cache's side; the proxy only asks before forwarding and offers the answer
 * afterwards.
 */
import type { ServiceConfig } from "../config/schema.ts";
import type { Bytes, JsonObject } from "./json.ts";

export interface CacheRequest {
  service: ServiceConfig;
  /** The client's request body, as it arrived (the alias in `model`, never the backend model). */
  body: JsonObject;
  /** The client's request headers (`Cache-Control`). */
  headers: Headers;
  /** The path the client called, with its query (`/v1/x?q=1`): part of the key. */
  pathAndQuery: string;
}

/**
 * The most of a streamed answer that is stored (its events as the client got them): a longer
 * stream is not stored, so one long answer cannot fill the cache.
 */
export const CACHED_STREAM_MAX_BYTES = 1024 * 1024;

/** A response as stored: enough to answer a later identical request byte for byte (a stream: its events). */
export interface CachedAnswer {
  status: number;
  contentType: string;
  body: Bytes;
}

export type CacheLookup =
  /** The cache does not apply to this request (streaming unless `llm.cache_streams`, `no-cache`, TTL 0, store error on the key). */
  | { kind: "bypass" }
  | { kind: "hit"; answer: CachedAnswer }
  /**
   * Not cached yet: `fill` stores the answer (it ignores non-2xx, never throws, gives up after its
   * timeout; it shares the answer too). `share` hands the answer, as soon as it is known, to identical requests waiting on
   * this one (in-flight coalescing); `undefined` when there is none (a failure): they then call
   * the backend themselves. Call it once the outcome is known, also on failure; extra calls do nothing.
   */
  | { kind: "miss"; fill(answer: CachedAnswer): Promise<void>; share(answer: CachedAnswer | undefined): void };

/** A lookup whose store read is under way; `result` judges it and counts it as a hit or miss. */
export interface PendingLookup {
  /** Never throws (see `lookup`). Call it once. */
  result(): Promise<CacheLookup>;
}

export interface ResponseCache {
  /** Never throws: a store error is counted and logged, and the request goes on as a miss or bypass. */
  lookup(request: CacheRequest): Promise<CacheLookup>;
  /**
   * Starts the store read now and counts nothing until `result()`: the LLM proxy starts it as
   * soon as the model is resolved, so on Redis the read travels with the limit check instead
   * of after it, and a request refused in between (visibility, policy, limits) counts no lookup.
   */
  begin(request: CacheRequest): PendingLookup;
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `response-cache` plugin. */
    responseCache: ResponseCache;
  }
}
