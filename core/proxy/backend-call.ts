/**
 * One backend attempt, shared by the sync direct proxy and the LLM proxy: `server.backend_timeout` bounds the wait for the response headers
 * (not the body: a long stream is fine once it started), and the client going away aborts
 * the backend request at any point, headers or body. An answer the gateway needs whole
 * (`callBackendWhole`) is also bounded while its body arrives.
 */

import type { ClientGone } from "./client-gone.ts";

export class BackendTimeoutError extends Error {
  override name = "BackendTimeoutError";
}

export interface CallOptions {
  fetch: typeof fetch;
  /** 0 = no limit. */
  timeoutMs: number;
  /** Aborted when the client disconnects (the request's `ctx.clientGone`). */
  clientSignal: ClientGone;
}

/** `fetch` for a streamed request body also needs `duplex` (not yet in the DOM typings). */
export type BackendInit = RequestInit & { duplex?: "half" };

export async function callBackend(url: string, init: BackendInit, options: CallOptions): Promise<Response> {
  return (await attempt(url, init, options, false)).response;
}

export interface WholeAnswer {
  response: Response;
  /** The response's body, already read (the response's own body is used up). */
  body: Uint8Array<ArrayBuffer>;
}

/**
 * An answer the gateway needs whole before it can answer (a non-streaming LLM answer):
 * `server.backend_timeout` bounds the wait for its headers and then, again, the read of its
 * body, so a backend that stalls mid-body fails with BackendTimeoutError and one that breaks
 * off with a plain Error, as if it had never answered. The caller can then try the next
 * backend: nothing has gone to the client yet. The body is read with `arrayBuffer()`, which
 * on Node's client collects the chunks straight from the socket (no web stream).
 */
export async function callBackendWhole(url: string, init: BackendInit, options: CallOptions): Promise<WholeAnswer> {
  return (await attempt(url, init, options, true)) as WholeAnswer;
}

async function attempt(url: string, init: BackendInit, options: CallOptions, whole: boolean): Promise<{ response: Response; body?: Uint8Array<ArrayBuffer> }> {
  // One controller for both reasons to stop (cheaper than AbortSignal.any, which builds a
  // composite signal per call). It stays linked to the client for the whole body.
  const control = new AbortController();
  const { clientSignal, timeoutMs } = options;
  if (clientSignal.aborted) control.abort(clientSignal.reason);
  const onClientGone = () => control.abort(clientSignal.reason);
  clientSignal.addEventListener("abort", onClientGone, { once: true });
  let timedOut = false;
  const onTimeout = () => {
    timedOut = true;
    control.abort();
  };
  let handle = timeoutMs > 0 ? setTimeout(onTimeout, timeoutMs) : undefined;
  let response: Response;
  try {
    response = await options.fetch(url, {
      // A proxy hands redirects to the client instead of following them.
      redirect: "manual",
      ...init,
      signal: control.signal,
    });
  } catch (error) {
    clientSignal.removeEventListener("abort", onClientGone);
    if (timedOut && !clientSignal.aborted) {
      throw new BackendTimeoutError(`no response headers within ${timeoutMs} ms (server.backend_timeout)`);
    }
    // The runtime's own detail ("ECONNREFUSED ...") reads better in an error body than "fetch failed".
    throw clientSignal.aborted ? error : new Error(describeFailure(error));
  } finally {
    clearTimeout(handle);
  }
  if (!whole) return { response };
  if (timeoutMs > 0) handle = setTimeout(onTimeout, timeoutMs);
  try {
    return { response, body: new Uint8Array(await response.arrayBuffer()) };
  } catch (error) {
    if (timedOut && !clientSignal.aborted) {
      throw new BackendTimeoutError(`the answer's body did not arrive within ${timeoutMs} ms of its headers (server.backend_timeout)`);
    }
    throw clientSignal.aborted ? error : new Error(`the backend broke off its answer: ${describeFailure(error)}`);
  } finally {
    clearTimeout(handle);
  }
}

/** A network error in a few words: the runtime's own detail rather than "fetch failed". */
export function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as Error & { cause?: unknown }).cause;
  if (cause instanceof Error) {
    const code = (cause as Error & { code?: unknown }).code;
    return typeof code === "string" ? `${code} (${cause.message})` : cause.message;
  }
  return error.message;
}

/** `base` (which may carry a path prefix) + the path and query. */
export function backendUrl(base: string, pathAndQuery: string): string {
  return `${base.replace(/\/+$/, "")}${pathAndQuery}`;
}
