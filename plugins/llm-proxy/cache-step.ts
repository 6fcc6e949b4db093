/**
 * The response cache around the LLM proxy's other steps (steps 1 and 7 of the processing order
 * in handler.ts): its read started as soon as the model is resolved, a hit answered from it
 * (`X-Cache: HIT`), and a miss filled once the response is written. Identical requests may be
 * waiting on a miss (coalescing): they get its answer, or are let go when it has none. The
 * cache keys on what the client sent, in the client's protocol.
 */
import type { CachedAnswer, CacheLookup, PendingLookup } from "../../core/llm/cache.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { wholeBody } from "../../core/pipeline/whole-body.ts";
import type { LlmModeDeps } from "./deps.ts";
import type { JsonBody } from "./protocol-route.ts";

declare module "../../core/pipeline/context.ts" {
  interface RequestVars {
    /** The response cache's read, started as soon as the model was resolved (`prepare`). */
    llmCacheLookup: PendingLookup | undefined;
  }
}

type CacheDeps = Pick<LlmModeDeps, "cache">;

/** Starts the cache's read of the request (undefined: no cache). */
export function beginLookup(deps: CacheDeps, ctx: RequestContext, service: ServiceConfig, body: JsonBody): PendingLookup | undefined {
  return deps.cache()?.begin({ service, body: body.value, headers: ctx.request.headers, pathAndQuery: `${ctx.url.pathname}${ctx.url.search}` });
}

/**
 * What the cache says of the request (its read started in `prepare`): the cache decides what
 * bypasses it (streams unless llm.cache_streams, no-cache, TTL 0). A miss lets the requests
 * waiting on it go when the request ends, whatever way it ends.
 */
export async function lookUp(deps: CacheDeps, ctx: RequestContext, service: ServiceConfig, body: JsonBody): Promise<CacheLookup> {
  const pending = ctx.vars.llmCacheLookup ?? beginLookup(deps, ctx, service, body);
  const lookup: CacheLookup = pending ? await pending.result() : { kind: "bypass" };
  if (lookup.kind === "miss") ctx.defer(() => lookup.share(undefined));
  return lookup;
}

/** A hit, answered whole (a stored stream is replayed whole). */
export function cachedResponse(answer: CachedAnswer): Response {
  return wholeBody(new Response(answer.body, { status: answer.status, headers: { "content-type": answer.contentType, "x-cache": "HIT" } }));
}

/**
 * A miss's answer: the requests waiting on it get it now, and the cache is filled after the
 * response is written (a finalizer runs once the body is sent). `stored` is undefined for
 * answers the cache may not keep (streams: stream-end.ts records those).
 */
export function fillCache(ctx: RequestContext, lookup: CacheLookup, stored: CachedAnswer | undefined): void {
  if (lookup.kind !== "miss") return;
  lookup.share(stored);
  if (!stored) return;
  ctx.defer(() => {
    void lookup.fill(stored);
  });
}
