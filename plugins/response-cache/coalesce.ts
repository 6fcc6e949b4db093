/**
 * In-flight coalescing (`llm.coalesce`): while one request (the leader) is at the backend for a
 * cache key, identical requests (followers) wait for its answer instead of each calling the
 * backend. Per process: replicas coalesce separately, the cache then serves them all.
 *
 * The leader hands over its answer once (`settle`); `undefined` (failure, non-2xx, nothing to
 * share) sends every follower to the backend on its own. A leader that never settles is
 * dropped after `maxWaitMs`, so no follower waits longer than that.
 */
import type { CachedAnswer } from "../../core/llm/cache.ts";

export class InFlightAnswers {
  private readonly leaders = new Map<string, Promise<CachedAnswer | undefined>>();

  constructor(private readonly maxWaitMs: number) {}

  /** The answer of the identical request in flight, or `undefined` when there is none to wait for. */
  follow(key: string): Promise<CachedAnswer | undefined> | undefined {
    return this.leaders.get(key);
  }

  /** Makes the caller the leader for `key`; the returned function settles it (later calls do nothing). */
  lead(key: string): (answer: CachedAnswer | undefined) => void {
    let resolve: (answer: CachedAnswer | undefined) => void = () => {};
    const answer = new Promise<CachedAnswer | undefined>((r) => (resolve = r));
    this.leaders.set(key, answer);
    let settled = false;
    const settle = (shared: CachedAnswer | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (this.leaders.get(key) === answer) this.leaders.delete(key);
      // Only a 2xx answer is what the followers would have got from the cache.
      resolve(shared && shared.status >= 200 && shared.status <= 299 ? shared : undefined);
    };
    const timer = setTimeout(() => settle(undefined), this.maxWaitMs);
    return settle;
  }
}
