/**
 * Waiting for something at most `ms`, fairly to the thing waited for.
 *
 * The event loop runs due timers before it reads sockets: when the process was busy past the
 * bound (a long synchronous task, a loaded CPU), an answer may already be waiting in a
 * socket when the timer fires. So when the bound passes this looks once more on the next
 * turn, after the sockets were read; only then is the wait over. Without the second look a
 * busy gateway calls answered calls timed out (CI: a job submission answered 503 because a
 * Redis reply sat unread behind the timer). That order is Node's; Deno may run the second look's
 * timer before the read of an answer already waiting, so on a loaded Deno a reply that came
 * while the process was busy can still be called late (test/adapters/kv-redis-busy-process.test.ts).
 */

export const EXPIRED: unique symbol = Symbol("expired");

/** `work`'s value, or EXPIRED when it has not settled within `ms` (a rejection is passed on). */
export async function settleWithin<T>(work: Promise<T>, ms: number): Promise<T | typeof EXPIRED> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<typeof EXPIRED>((resolve) => {
    timer = setTimeout(() => (timer = setTimeout(() => resolve(EXPIRED), 0)), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
