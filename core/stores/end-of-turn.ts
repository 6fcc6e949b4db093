/**
 * Store writes gathered during one turn of the event loop and made together at its end:
 * under load, counters touched by every response (usage, per-consumer tokens) cost a share
 * of one store operation per turn instead of one per response. The owner gathers its counts,
 * calls `schedule()`, and gives `write` a function that takes what was gathered and writes it
 * (handling its own errors). `flush()` writes at once and waits for every write in flight:
 * call it on close so nothing gathered is lost.
 */
export class EndOfTurnWriter {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly writing = new Set<Promise<void>>();

  constructor(private readonly write: () => Promise<void> | undefined) {}

  /** Asks for a write at the end of this turn (once per turn, however often it is called). */
  schedule(): void {
    this.timer ??= setTimeout(() => void this.flush(), 0);
  }

  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const started = this.write();
    if (started) {
      const tracked: Promise<void> = started.finally(() => this.writing.delete(tracked));
      this.writing.add(tracked);
    }
    await Promise.all(this.writing);
  }
}
