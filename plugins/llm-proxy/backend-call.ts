/**
 * One backend attempt: `server.backend_timeout` bounds the wait for the response headers only
 * (a long answer or stream is fine once it started), and the client going away aborts the
 * backend request at any point, headers or body.
 */

export class BackendTimeout extends Error {
  override name = "BackendTimeout";
}

export interface CallOptions {
  fetch: typeof fetch;
  /** 0 = no limit. */
  timeoutMs: number;
  /** Aborted when the client disconnects. */
  clientSignal: AbortSignal;
}

export async function callBackend(url: string, init: RequestInit, options: CallOptions): Promise<Response> {
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
    return await options.fetch(url, { ...init, redirect: "manual", signal: control.signal });
  } catch (error) {
    clientSignal.removeEventListener("abort", onClientGone);
    if (timedOut && !clientSignal.aborted) {
      throw new BackendTimeout(`no response headers within ${options.timeoutMs} ms (server.backend_timeout)`);
    }
    // The runtime's own detail ("ECONNREFUSED ...") reads better in the error body than "fetch failed".
    const cause = error instanceof Error ? (error as Error & { cause?: unknown }).cause : undefined;
    if (cause instanceof Error) {
      const code = (cause as Error & { code?: unknown }).code;
      throw new Error(typeof code === "string" ? `${code} (${cause.message})` : cause.message);
    }
    throw error;
  } finally {
    clearTimeout(handle);
  }
}

/** `base` (which may carry a path prefix) + the path and query. */
export function backendUrl(base: string, pathAndQuery: string): string {
  return `${base.replace(/\/+$/, "")}${pathAndQuery}`;
}
