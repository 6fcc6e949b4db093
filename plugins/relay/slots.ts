/**
 * The jobs running in one process over all its relay workers. A hot reload starts a new
 * worker while the replaced one lets its running jobs finish; both count against the same
 * slots, so during that overlap the process runs at most the new `relay.concurrency` jobs
 * in total (the new worker claims as the old jobs end) instead of up to twice as many.
 */
export class RelaySlots {
  private count = 0;
  private readonly waiters = new Set<() => void>();

  /** Jobs running now in every worker sharing these slots. */
  get running(): number {
    return this.count;
  }

  /** Workers waiting for a slot now. */
  get waiting(): number {
    return this.waiters.size;
  }

  take(): void {
    this.count++;
  }

  give(): void {
    this.count--;
    // Every waiting worker looks again; each checks against its own concurrency.
    for (const wake of [...this.waiters]) wake();
  }

  /** Resolves when a job ends in any worker, or when `signal` aborts. */
  freed(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        this.waiters.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      if (signal.aborted) return resolve();
      this.waiters.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
