/** A retry schedule: a base delay doubled on each retry, capped (webhook deliveries, async job retries). */

/**
 * Delay before retry number `retry` (1 = the first retry, after the inline attempt failed).
 * Exponent growth stops at the cap, so a large retry count cannot overflow.
 */
export function retryDelayMs(retry: number, baseMs: number, capMs: number): number {
  let delay = baseMs;
  for (let i = 1; i < retry && delay < capMs; i++) delay *= 2;
  return Math.min(delay, capMs);
}
