/** A retry schedule: a base delay doubled on each retry, capped (webhook deliveries, async job retries, backend retry rounds). */

/**
 * Delay before retry number `retry` (1 = the first retry, after the inline attempt failed).
 * Exponent growth stops at the cap, so a large retry count cannot overflow.
 */
export function retryDelayMs(retry: number, baseMs: number, capMs: number): number {
  let delay = baseMs;
  for (let i = 1; i < retry && delay < capMs; i++) delay *= 2;
  return Math.min(delay, capMs);
}

/**
 * "Full jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter"): a uniform draw in
 * [0, retryDelayMs), so clients that failed together do not retry together. `random` returns
 * [0, 1) like Math.random (injected by tests).
 */
export function jitteredDelayMs(retry: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  return Math.floor(random() * retryDelayMs(retry, baseMs, capMs));
}
