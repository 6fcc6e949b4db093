/**
 * One delivery attempt: re-check the target against what its name resolves to now, sign
 * with a fresh timestamp, POST to exactly the addresses that check vetted (the name is not
 * resolved again: DNS rebinding) without following redirects, and say what happened.
 * 2xx/3xx/4xx mean delivered (the receiver answered; a 4xx will not change on retry),
 * 5xx, network errors and timeouts are worth retrying, a refused target is not.
 */
import type { PinnedFetch } from "../../core/plugins/types.ts";
import { signatureHeader } from "./signature.ts";
import { checkCallbackUrl } from "./target.ts";

export interface AttemptSettings {
  fetchPinned: PinnedFetch;
  lookupHost: (hostname: string) => Promise<string[]>;
  allowPrivateNetworks: boolean;
  /** "" = unsigned. */
  signingSecret: string;
  timeoutMs: number;
  /** Milliseconds since the epoch (the injected clock). */
  now(): number;
}

export interface AttemptRequest {
  url: string;
  jobId: string;
  body: string;
}

export type AttemptOutcome =
  | { delivered: true; status: number }
  | { delivered: false; retry: boolean; error: string };

/** Rejects when `signal` aborts first; the lookup itself cannot be cancelled, only abandoned. */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

export async function attemptDelivery(request: AttemptRequest, settings: AttemptSettings): Promise<AttemptOutcome> {
  // One deadline for the whole attempt (resolution included), so the lease that guards it holds.
  const signal = AbortSignal.timeout(settings.timeoutMs);
  const timedOut = () => ({ delivered: false as const, retry: true, error: `timed out after ${settings.timeoutMs} ms` });
  try {
    const target = await raceAbort(
      checkCallbackUrl(request.url, { allowPrivateNetworks: settings.allowPrivateNetworks, lookupHost: settings.lookupHost }),
      signal,
    );
    if (!target.ok) return { delivered: false, retry: target.unresolved === true, error: target.reason };

    const headers: Record<string, string> = { "content-type": "application/json", "x-job-id": request.jobId };
    if (settings.signingSecret !== "") {
      headers["x-svc-signature"] = await signatureHeader(settings.signingSecret, Math.floor(settings.now() / 1000), request.body);
    }
    const response = await settings.fetchPinned(target.url, target.addresses, { method: "POST", headers, body: request.body, redirect: "manual", signal });
    // Only the status matters; release the connection without reading the body.
    await response.body?.cancel().catch(() => {});
    if (response.status < 500) return { delivered: true, status: response.status };
    return { delivered: false, retry: true, error: `HTTP ${response.status}` };
  } catch (error) {
    if (signal.aborted) return timedOut();
    return { delivered: false, retry: true, error: `network error: ${describe(error)}` };
  }
}

/** Node's fetch says only "fetch failed"; the useful part (ECONNREFUSED, ...) is the cause. */
function describe(error: unknown): string {
  const { message, cause } = error as { message?: string; cause?: { message?: string; code?: string } };
  const detail = cause?.code ?? cause?.message;
  return detail ? `${message ?? "failed"} (${detail})` : (message ?? String(error));
}
