/**
 * The LLM response cache (docs/design.md#response-cache), in the KV store so replicas share it. It
 * provides the `responseCache` service; the LLM proxy asks it before forwarding and offers
 * it the answer afterwards. On when some service sets `response_cache_ttl`.
 *
 * Bypassed (no lookup, no counters) when the service's TTL is 0, the request streams (unless
 * `llm.cache_streams`), or its `Cache-Control` contains `no-cache`. Only 2xx answers are
 * stored, and only under a key of their kind (fits-key.ts): an event stream never under a
 * plain request's key, nor the reverse. Streamed answers are keyed apart from non-streamed
 * ones and never coalesced (the LLM proxy fills them once the stream has ended complete).
 * A store error is counted (`svc_cache_errors_total{op}`), logged, and the request goes on
 * as if there were no cache.
 */
import { durationMs } from "../../core/config/duration.ts";
import { fieldsOf } from "../../core/config/schema.ts";
import { EXPIRED, settleWithin } from "../../core/deadline.ts";
import type { CachedAnswer, CacheLookup, CacheRequest, PendingLookup, ResponseCache } from "../../core/llm/cache.ts";
import { counterChildren } from "../../core/metric-labels.ts";
import { definePlugin, type PluginApi } from "../../core/plugins/types.ts";
import { cacheLlmFields, cacheServiceFields, embeddedCacheFields } from "./config.ts";
import { InFlightAnswers } from "./coalesce.ts";
import { decodeEntry, encodeEntry } from "./entry.ts";
import { fitsKey } from "./fits-key.ts";
import { cacheKey } from "./key.ts";

/** docs/design.md#constants: a fill that takes longer is abandoned (and counted as a set error). */
export const FILL_TIMEOUT_MS = 5000;

/** How long followers wait for a leader when `server.backend_timeout` is 0. */
const FALLBACK_WAIT_MS = 300_000;

function bypassed({ service, body, headers }: CacheRequest, cacheStreams: boolean): boolean {
  return service.response_cache_ttl <= 0 || (body.stream === true && !cacheStreams) || /no-cache/i.test(headers.get("cache-control") ?? "");
}

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  const outcome = await settleWithin(work, ms);
  if (outcome === EXPIRED) throw new Error(`no answer from the store within ${ms} ms`);
  return outcome;
}

function createCache(api: PluginApi): ResponseCache {
  const labels = ["service_type", "model"];
  const hits = api.metrics.counter({ name: "svc_cache_hits_total", help: "LLM responses served from the response cache", labelNames: labels });
  const misses = api.metrics.counter({ name: "svc_cache_misses_total", help: "LLM cache lookups that found nothing", labelNames: labels });
  const failures = api.metrics.counter({
    name: "svc_cache_errors_total",
    help: "LLM response cache failures by operation (key, get, set); the request went on without the cache",
    labelNames: [...labels, "op"],
  });

  // Label sets prepared once per model (see core/metric-labels.ts).
  const hitsFor = counterChildren(hits);
  const missesFor = counterChildren(misses);

  const coalesced = api.metrics.counter({
    name: "svc_cache_coalesced_total",
    help: "LLM requests answered with the answer of an identical request already at the backend (in-flight coalescing)",
    labelNames: labels,
  });
  const coalescedFor = counterChildren(coalesced);
  // The leader's whole backend call is bounded by the backend timeout; past it, followers go on their own.
  const { coalesce, cache_key: keyMode, cache_streams: cacheStreams } = fieldsOf(api.config, cacheLlmFields);
  const inFlight = coalesce ? new InFlightAnswers(durationMs(api.config.server.backend_timeout) || FALLBACK_WAIT_MS) : undefined;
  const noShare = () => {};

  const bypass: PendingLookup = { result: () => Promise.resolve({ kind: "bypass" }) };

  function begin(request: CacheRequest): PendingLookup {
    if (bypassed(request, cacheStreams)) return bypass;
    const { service } = request;
    const stream = request.body.stream === true;
    const metricLabels = { service_type: service.type, model: service.model };
    const failed = (op: "key" | "get" | "set", error: unknown) => {
      failures.inc({ ...metricLabels, op });
      api.log.warn("response_cache_error", { op, model: service.model, error });
    };
    let key: string;
    try {
      key = cacheKey({ serviceType: service.type, pathAndQuery: request.pathAndQuery, stream }, service.model, request.body, keyMode);
    } catch (error) {
      return {
        result: () => {
          failed("key", error);
          return Promise.resolve({ kind: "bypass" });
        },
      };
    }
    // Settles with the entry or the store's error, never rejects: nobody may be waiting yet.
    const read = api.kv.get(key).then(
      (stored) => ({ stored }),
      (error: unknown) => ({ error }),
    );
    return {
      async result(): Promise<CacheLookup> {
        const outcome = await read;
        if ("error" in outcome) {
          failed("get", outcome.error);
          return { kind: "bypass" };
        }
        if (outcome.stored !== null) {
          try {
            const answer = decodeEntry(outcome.stored);
            if (!fitsKey(answer, stream)) {
              throw new Error(`the stored answer is ${answer.contentType || "untyped"}, not an answer to a ${stream ? "streamed" : "non-streamed"} request`);
            }
            hitsFor(metricLabels).inc();
            return { kind: "hit", answer };
          } catch (error) {
            // Unreadable entry: answer from the backend, whose answer then replaces it.
            failed("get", error);
          }
        }
        // A stream's answer is known only at its end: identical streams do not wait for it.
        const coalescing = stream ? undefined : inFlight;
        const leader = coalescing?.follow(key);
        if (leader) {
          const answer = await leader;
          if (answer) {
            coalescedFor(metricLabels).inc();
            return { kind: "hit", answer };
          }
          // The leader failed: this request calls the backend itself, as a plain miss.
        }
        missesFor(metricLabels).inc();
        const lead = leader || !coalescing ? undefined : coalescing.lead(key);
        // Followers get only what the cache would have served them.
        const share = lead ? (answer: CachedAnswer | undefined) => lead(answer && fitsKey(answer, stream) ? answer : undefined) : noShare;
        return {
          kind: "miss",
          share,
          async fill(answer: CachedAnswer) {
            share(answer);
            if (answer.status < 200 || answer.status > 299) return;
            if (!fitsKey(answer, stream)) {
              api.log.warn("response_cache_not_stored", {
                model: service.model,
                stream,
                content_type: answer.contentType,
                reason: "the answer's content type does not fit the request",
              });
              return;
            }
            try {
              await withTimeout(api.kv.set(key, encodeEntry(answer), service.response_cache_ttl * 1000), FILL_TIMEOUT_MS);
            } catch (error) {
              failed("set", error);
            }
          },
        };
      },
    };
  }

  return { begin, lookup: (request) => begin(request).result() };
}

/** The embedded store's cap (`redis.embedded_cache_max_mb`), read at each scrape; nothing on Redis. */
function registerMemoryMetrics(api: PluginApi): void {
  const usage = () => api.kv.evictableUsage?.();
  if (!usage()) return;
  api.metrics.gauge({
    name: "svc_cache_memory_bytes",
    help: "Embedded store: bytes held by cached LLM answers, as counted against redis.embedded_cache_max_mb",
    collect() {
      this.set(usage()?.bytes ?? 0);
    },
  });
  api.metrics.counter({
    name: "svc_cache_evictions_total",
    help: "Embedded store: cached LLM answers dropped (least recently used first) to stay under redis.embedded_cache_max_mb",
    collect() {
      // The store's own count, which survives reloads: set, not added to.
      this.reset();
      this.inc(usage()?.evicted ?? 0);
    },
  });
}

export default definePlugin({
  name: "response-cache",
  serviceFields: cacheServiceFields,
  sectionFields: [cacheLlmFields, embeddedCacheFields],
  enabled: (config) => config.services.some((service) => service.response_cache_ttl > 0),
  setup(api) {
    api.provide("responseCache", createCache(api));
    registerMemoryMetrics(api);
  },
});
