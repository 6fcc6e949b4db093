/** Time and IDs are injected so tests can drive them; production uses the system ones. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export interface IdSource {
  /** A new UUID v4. */
  newId(): string;
}

export const systemClock: Clock = { now: () => Date.now() };

export const randomIds: IdSource = { newId: () => crypto.randomUUID() };

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private current = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
