/**
 * Retry rounds over a service's backends (backend_health.retry_*), as the failover loop
 * (core/proxy/backends.ts) runs them: the waits follow core/backoff.ts with full jitter.
 */
import type { ClientGone } from "../../core/proxy/client-gone.ts";
import { jitteredDelayMs } from "../../core/backoff.ts";
import type { Clock } from "../../core/clock.ts";
import type { RetryRounds } from "../../core/proxy/backend-health.ts";

export interface RetrySettings {
  rounds: number;
  deadlineMs: number;
  backoffMs: number;
  backoffMaxMs: number;
}

/** Resolves after `ms`, or as soon as `signal` aborts (the client left: no point waiting). */
function wait(ms: number, signal?: ClientGone): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

export function retryRounds(settings: RetrySettings, clock: Clock, onRound: (serviceType: string) => void, random: () => number = Math.random): RetryRounds {
  return {
    rounds: settings.rounds,
    deadlineMs: settings.deadlineMs,
    delayMs: (retry) => jitteredDelayMs(retry, settings.backoffMs, settings.backoffMaxMs, random),
    now: () => clock.now(),
    wait,
    started: onRound,
  };
}
