/**
 * The health of proxied backends, as the failover loop (backends.ts `withFailover`) consults
 * it: which statuses move on to the next backend, which backends sit out, and what each
 * attempt's outcome was. The `backend-health` plugin provides it as the `backendHealth`
 * service; without that plugin the spec's rule applies (SPEC_FAILOVER: a 5xx or a network
 * error fails over, every backend is always tried, in one pass).
 */
import type { BackendTarget } from "./backends.ts";
import type { ClientGone } from "./client-gone.ts";

/** What one attempt at a backend produced, as far as its health goes. */
export type AttemptResult =
  | { ok: true }
  /** A status in the failover list (its Retry-After header, if any), or a network error (no status). */
  | { ok: false; status?: number; retryAfter?: string | null };

export interface BackendHealth {
  /** Whether a backend's answer with this status moves on to the next backend. */
  failsOver(status: number): boolean;
  /**
   * The backends to try, in the given order, without those sitting out; when every one
   * sits out, the one that comes back soonest (never none).
   */
  available(serviceType: string, targets: readonly BackendTarget[]): readonly BackendTarget[];
  /**
   * When every one of `targets` sits out a Retry-After its backend sent: the ms until the first
   * comes back (calling any sooner would ignore what it asked). Undefined when one is available,
   * or one sits out an ejection for failures (then `available` offers the soonest).
   */
  waitingOutRetryAfter(targets: readonly BackendTarget[]): number | undefined;
  /** Records an attempt's outcome; `targets` is the service's whole backend list (for the ejection share). */
  record(serviceType: string, targets: readonly BackendTarget[], target: BackendTarget, result: AttemptResult): void;
  /** More passes over the backends after one where every backend failed; none = one pass. */
  readonly retry?: RetryRounds;
}

/**
 * Retry rounds (backend_health.retry_*): after a pass in which every backend failed, a wait
 * (backoff with jitter), then another pass, while rounds and the request's time budget last.
 */
export interface RetryRounds {
  /** Passes at most, the first included. */
  readonly rounds: number;
  /** Time budget of one request's backend attempts, all rounds together. */
  readonly deadlineMs: number;
  /** The wait before retry round `retry` (1 = the second pass). */
  delayMs(retry: number): number;
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  wait(ms: number, signal?: ClientGone): Promise<void>;
  /** A retry round starts (for a metric). */
  started(serviceType: string): void;
}

/**
 * docs/design.md#backend-routing: a network error or a 5xx fails over; no backend ever sits out.
 */
export const SPEC_FAILOVER: BackendHealth = {
  failsOver: (status) => status >= 500,
  available: (_serviceType, targets) => targets,
  waitingOutRetryAfter: () => undefined,
  record: () => {},
};

/** Which health a failover loop consults, and the service type it reports under. */
export interface FailoverRoute {
  health: BackendHealth;
  serviceType: string;
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `backend-health` plugin. */
    backendHealth: BackendHealth;
  }
}
