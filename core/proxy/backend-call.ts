/**
 * One backend attempt, shared by the sync direct proxy and the LLM proxy: `server.backend_timeout` bounds the wait for the response headers
 * (not the body: a long stream is fine once it started), and the client going away aborts
 * the backend request at any point, headers or body. An answer the gateway needs whole
 * (`readWhole`) is also bounded while its body arrives.
 */

export class BackendTimeoutError extends Error {
  override name = "BackendTimeoutError";
}

export interface CallOptions {
  fetch: typeof fetch;
  /** 0 = no limit. */
  timeoutMs: number;
  /** The client request's signal: aborted when the client disconnects. */
  clientSignal: AbortSignal;
}

/** `fetch` for a streamed request body also needs `duplex` (not yet in the DOM typings). */
export type BackendInit = RequestInit & { duplex?: "half" };

export async function callBackend(url: string, init: BackendInit, options: CallOptions): Promise<Response> {
  // One controller for both reasons to stop (cheaper than AbortSignal.any, which builds a
  // composite signal per call). It stays linked to the client for the whole body.
  const control = new AbortController();
  const { clientSignal } = options;
  if (clientSignal.aborted) control.abort(clientSignal.reason);
  const onClientGone = () => control.abort(clientSignal.reason);
  clientSignal.addEventListener("abort", onClientGone, { once: true });
  let timedOut = false;
  const handle =
    options.timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          control.abort();
        }, options.timeoutMs)
      : undefined;
  try {
    return await options.fetch(url, {
      // A proxy hands redirects to the client instead of following them.
      redirect: "manual",
      ...init,
      signal: control.signal,
    });
  } catch (error) {
    clientSignal.removeEventListener("abort", onClientGone);
    if (timedOut && !clientSignal.aborted) {
      throw new BackendTimeoutError(`no response headers within ${options.timeoutMs} ms (server.backend_timeout)`);
    }
    // The runtime's own detail ("ECONNREFUSED ...") reads better in an error body than "fetch failed".
    throw clientSignal.aborted ? error : new Error(describeFailure(error));
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

/**
 * The whole body of an answer the gateway reads complete before answering (a non-streaming LLM
 * answer). `timeoutMs` (`server.backend_timeout`, 0 = no limit) also bounds each silence
 * between body chunks, not the whole read: a large answer that keeps arriving is fine, a
 * backend that stops mid-body fails with BackendTimeoutError like one that never sent headers.
 * A backend that breaks off fails with a plain Error, like a network error. Either way the
 * caller can try the next backend, since nothing was sent to the client yet.
 */
export async function readWhole(response: Response, timeoutMs: number): Promise<Uint8Array<ArrayBuffer>> {
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array<ArrayBuffer>[] = [];
  let total = 0;
  let stalled = false;
  // One timer for the whole read, moved on lazily: a chunk only records when it came.
  let lastChunkAt = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watch = () => {
    const idle = Date.now() - lastChunkAt;
    if (idle < timeoutMs) {
      timer = setTimeout(watch, timeoutMs - idle);
      return;
    }
    stalled = true;
    // Ends the pending read and releases the backend connection.
    reader.cancel().catch(() => {});
  };
  if (timeoutMs > 0) timer = setTimeout(watch, timeoutMs);
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (stalled) throw new BackendTimeoutError(`the answer stopped arriving: nothing for ${timeoutMs} ms after part of its body (server.backend_timeout)`);
      if (done) break;
      chunks.push(value as Uint8Array<ArrayBuffer>);
      total += value.byteLength;
      lastChunkAt = Date.now();
    }
  } catch (error) {
    if (error instanceof BackendTimeoutError) throw error;
    throw new Error(`the backend broke off its answer: ${describeFailure(error)}`);
  } finally {
    clearTimeout(timer);
  }
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}
