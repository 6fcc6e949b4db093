/**
 * Sends one request to a service's backends in failover order (core/proxy/backends.ts),
 * skipping those sitting out (the backend-health plugin), and streams the answer back chunk by chunk. When no backend answered, the caller gets
 * an error body saying which backends failed and why: 504 when the last one timed out,
 * 502 otherwise. Nothing here waits for a whole response body.
 */
import { errorResponse, errors } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { BackendHealth } from "../../core/proxy/backend-health.ts";
import { type BackendTarget, withFailover } from "../../core/proxy/backends.ts";
import { wholeBody } from "../../core/pipeline/whole-body.ts";
import { responseHeaders } from "../../core/proxy/headers.ts";
import { bodyChunks } from "../../core/proxy/body-chunks.ts";
import { ChunksResponse } from "../../core/proxy/own-body-response.ts";
import { type BackendInit, BackendTimeoutError, callBackend, type CallOptions, describeFailure } from "../../core/proxy/backend-call.ts";
export { backendUrl } from "../../core/proxy/backend-call.ts";

export interface ForwardOptions extends CallOptions {
  log: Logger;
  /** For log lines: the model alias the request resolved to. */
  model: string;
  /** The resolved service's type, for the backend health metrics. */
  serviceType: string;
  /** Which answers fail over, which backends sit out (the spec's rule without the backend-health plugin). */
  health: BackendHealth;
  /** The server adapter writes an own-body answer's chunks itself (`RequestContext.ownBodies`). */
  ownBodies?: boolean;
}

/** The backend request for one target: its address and init (body, headers) for that target. */
export type BuildAttempt = (target: BackendTarget) => { url: string; init: BackendInit };

/** Statuses whose responses carry no body (a Response with one cannot be constructed). */
const NO_BODY = new Set([204, 205, 304]);

/**
 * An answer with a declared length up to this size is read whole and sent in one write:
 * with the length known nothing streams in between anyway, and a streamed relay costs a web
 * stream (10-25 µs to build on Node 20), a promise per chunk and a separate write for the
 * headers. Anything longer, of unknown length (SSE) or compressed streams through as it arrives.
 */
const WHOLE_BODY_LIMIT = 64 * 1024;

function readWhole(backend: Response): boolean {
  const declared = backend.headers.get("content-length");
  if (declared === null || backend.headers.has("content-encoding")) return false;
  const length = Number(declared);
  return Number.isInteger(length) && length >= 0 && length <= WHOLE_BODY_LIMIT;
}

/** The backend's status, headers (minus hop-by-hop) and body, streamed through as it arrives (see WHOLE_BODY_LIMIT). */
export async function relayResponse(backend: Response, method: string, ownBodies = false): Promise<Response> {
  const init = { status: backend.status, statusText: backend.statusText, headers: responseHeaders(backend.headers) };
  if (NO_BODY.has(backend.status) || method === "HEAD") {
    void backend.body?.cancel().catch(() => {});
    return new Response(null, init);
  }
  if (!readWhole(backend)) {
    // Where the server writes chunks itself, they go from the backend's socket to the client's
    // without a web stream on either side (core/proxy/own-body-response.ts).
    const chunks = ownBodies ? bodyChunks(backend) : undefined;
    return chunks ? new ChunksResponse(chunks, init) : new Response(backend.body, init);
  }
  let bytes: ArrayBuffer;
  try {
    bytes = await backend.arrayBuffer();
  } catch (error) {
    throw errors.badGateway(`the backend broke off its answer: ${describeFailure(error)}`);
  }
  return wholeBody(new Response(new Uint8Array(bytes), init));
}

export async function forward(targets: readonly BackendTarget[], build: BuildAttempt, method: string, options: ForwardOptions): Promise<Response> {
  const result = await withFailover(
    targets,
    (target) => {
      const { url, init } = build(target);
      return callBackend(url, init, options);
    },
    options.clientSignal,
    { health: options.health, serviceType: options.serviceType },
  );
  if (result.failures.length > 0) {
    options.log.warn("backend_failover", {
      model: options.model,
      failures: result.failures.map((f) => ({ url: f.target.url, reason: f.reason })),
      answered_by: result.target?.url,
    });
  }
  if (result.response) return await relayResponse(result.response, method, options.ownBodies);
  if (options.clientSignal.aborted) {
    // Nobody reads this; the status is for the request counter and logs (nginx's 499).
    return errorResponse(499, "api_error", "the client closed the request before a backend answered", {}, "client_closed");
  }
  const tried = result.failures.map((f) => `${f.target.url}: ${f.reason}`).join("; ");
  if (result.error instanceof BackendTimeoutError) {
    throw errors.gatewayTimeout(`the backend for model "${options.model}" did not answer in time: ${tried}`);
  }
  throw errors.badGateway(`the backend for model "${options.model}" is unreachable: ${tried}`);
}
