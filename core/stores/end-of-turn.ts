/**
 * The end of this turn: `setImmediate` (Node, Deno, Bun) runs once the turn's I/O callbacks are
 * done, so the counts of every response of the turn go in one write, and no later. Elsewhere
 * `setTimeout(0)`, which Node and browsers clamp to 1 ms: a response waiting for its counts
 * (`written()`) would wait that long.
 */
interface ImmediateTimers {
  setImmediate?: (callback: () => void) => unknown;
  clearImmediate?: (handle: unknown) => void;
}
const immediate = globalThis as ImmediateTimers;
const atTurnEnd: (callback: () => void) => unknown = immediate.setImmediate?.bind(globalThis) ?? ((callback) => setTimeout(callback, 0));
const cancelTurnEnd: (handle: unknown) => void = immediate.clearImmediate?.bind(globalThis) ??
  ((handle) => clearTimeout(handle as ReturnType<typeof setTimeout>));

/**
 * Store writes gathered during one turn of the event loop and made together at its end:
 * under load, counters touched by every response (usage, per-consumer tokens) cost a share
 * of one store operation per turn instead of one per response. The owner gathers its counts,
 * calls `schedule()`, and gives `write` a function that takes what was gathered and writes it
 * (handling its own errors). `written()` tells when what was gathered so far is in the store
 * (for a response that must not end before its counts are visible), without writing any
 * sooner. `flush()` writes at once and waits for every write in flight: call it on close so
 * nothing gathered is lost.
 */
export class EndOfTurnWriter {
  private timer: unknown;
  private readonly writing = new Set<Promise<void>>();
  /** Settles when the scheduled write has been made; built only when someone waits for it. */
  private upcoming: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(private readonly write: () => Promise<void> | undefined) {}

  /** Asks for a write at the end of this turn (once per turn, however often it is called). */
  schedule(): void {
    this.timer ??= atTurnEnd(this.endTurn);
  }

  /**
   * Resolves once everything gathered before the call is written (the write this turn ends
   * with, and the writes in flight); undefined when nothing is waiting to be written.
   */
  written(): Promise<void> | undefined {
    if (this.timer !== undefined) {
      if (!this.upcoming) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        this.upcoming = { promise, resolve };
      }
      return this.upcoming.promise;
    }
    if (this.writing.size === 0) return undefined;
    return Promise.all(this.writing).then(() => undefined);
  }

  async flush(): Promise<void> {
    if (this.timer !== undefined) cancelTurnEnd(this.timer);
    const waiting = this.writeNow();
    try {
      await Promise.all(this.writing);
    } finally {
      waiting?.resolve();
    }
  }

  /** The turn's write; the writes in flight are waited for only when `written()` was asked (no promise per turn otherwise). */
  private readonly endTurn = (): void => {
    const waiting = this.writeNow();
    if (waiting) void Promise.all(this.writing).finally(waiting.resolve);
  };

  /** Starts the write of what was gathered; gives back who waits for it. */
  private writeNow(): { resolve: () => void } | undefined {
    this.timer = undefined;
    const waiting = this.upcoming;
    this.upcoming = undefined;
    const started = this.write();
    if (started) {
      const tracked: Promise<void> = started.finally(() => this.writing.delete(tracked));
      this.writing.add(tracked);
    }
    return waiting;
  }
}
