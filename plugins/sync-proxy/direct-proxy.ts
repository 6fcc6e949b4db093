/**
 * The sync direct proxy (docs/design.md#sync-direct-proxy): the request goes to the backend base
 * address plus the original path and query, with `inference_headers` (or `backends[].headers`)
 * overriding the client's headers and `model` rewritten for the target; the answer
 * streams back. Backends are tried in the core's failover order.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import { backendOrder, type BackendTarget } from "../../core/proxy/backends.ts";
import { forwardHeaders } from "../../core/proxy/headers.ts";
import type { SyncBody } from "../../core/proxy/modes.ts";
import type { BackendInit } from "../../core/proxy/backend-call.ts";
import { backendUrl, forward, type ForwardOptions } from "./forward.ts";
import { StreamReplay } from "./stream-replay.ts";

/**
 * How much of a streamed body is kept so another backend can be tried when the first one
 * fails before answering. Enough for a refused connection (the runtimes take one or two
 * 64 KiB chunks first), small enough that concurrent uploads cannot pile up memory.
 */
const REPLAY_LIMIT = 1024 * 1024;

/**
 * The runtime's fetch negotiates compression itself and hands back a decoded body (whose
 * `content-encoding` the core then drops); a client's `accept-encoding` passed through
 * would make Deno skip decoding and the client would get compressed bytes unlabelled.
 */
const NOT_FORWARDED = ["accept-encoding"];

const encoder = new TextEncoder();

export function noBackend(service: ServiceConfig): Error {
  return errors.badGateway(`model "${service.model || service.type}" has no backend: set inference_url or backends[] in its service entry`);
}

/** The JSON body for one target: `model` rewritten when the target names one and the body carries a different one. */
function jsonFor(body: Extract<SyncBody, { kind: "json" }>, target: BackendTarget): Uint8Array<ArrayBuffer> {
  if (target.model === "" || !Object.hasOwn(body.value, "model") || body.value.model === target.model) {
    // The bytes were read from the request body: never a SharedArrayBuffer.
    return body.bytes as Uint8Array<ArrayBuffer>;
  }
  // Re-serialized, so fetch computes the new content-length.
  return encoder.encode(JSON.stringify({ ...body.value, model: target.model }));
}

export type CallSettings = Omit<ForwardOptions, "clientSignal" | "model" | "serviceType">;

export function directProxy(settings: CallSettings) {
  return async function proxyDirect(ctx: RequestContext, body: SyncBody): Promise<Response> {
    const service = ctx.service;
    if (!service) throw new Error("direct proxy called before the model was resolved");
    const targets = backendOrder(service);
    if (targets.length === 0) throw noBackend(service);
    const method = ctx.request.method;
    const pathAndQuery = `${ctx.url.pathname}${ctx.url.search}`;
    const streamed = body.kind === "stream" ? body.stream : null;
    // Only worth a copy when there is another attempt to replay it to: another backend or another round.
    const attempts = targets.length * (settings.health.retry?.rounds ?? 1);
    const replay = streamed && attempts > 1 ? new StreamReplay(streamed, REPLAY_LIMIT) : undefined;

    const build = (target: BackendTarget): { url: string; init: BackendInit } => {
      const headers = forwardHeaders(ctx.request.headers, target.headers, NOT_FORWARDED, ctx.backendHeaders);
      const init: BackendInit = { method, headers };
      if (body.kind === "json") {
        init.body = jsonFor(body, target);
        // Sent without a JSON type but read as JSON: the backend is told what it gets.
        if (body.retyped) headers["content-type"] = "application/json";
      } else if (body.kind === "read") {
        init.body = body.bytes as Uint8Array<ArrayBuffer>;
      } else if (streamed) {
        const stream = replay ? replay.next() : streamed;
        if (!stream) throw new Error("not tried: the streamed request body already went to an earlier backend and cannot be replayed");
        init.body = stream;
        init.duplex = "half";
        // Node's fetch clones (tees) the request body unless redirects are an error, and
        // the unread branch of the tee keeps every chunk: a 200 MB upload stayed whole in
        // memory. So a backend redirecting an upload fails over like a network error.
        init.redirect = "error";
      }
      return { url: backendUrl(target.url, pathAndQuery), init };
    };

    try {
      return await forward(targets, build, method, {
        ...settings,
        clientSignal: ctx.clientGone,
        model: service.model,
        serviceType: service.type,
        ownBodies: ctx.ownBodies,
      });
    } finally {
      replay?.seal();
    }
  };
}
