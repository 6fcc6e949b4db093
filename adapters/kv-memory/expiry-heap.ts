/**
 * Min-heap of (expiry time, key). Lazy expiry alone would keep keys that are written
 * with a TTL and never read again (idempotency records, leases) forever; popping the
 * heap on every operation reclaims them without a timer, so tests driving a manual
 * clock see the same behaviour as production.
 *
 * Entries are never updated in place: a key whose TTL changes gets a new entry and the
 * old one is discarded when popped (the caller re-checks the key's real expiry).
 *
 * The times and keys sit in two parallel arrays that only grow: no object (and no boxed
 * time) per entry, which every write with a TTL made and the old generation then held, and
 * no backing store that V8 trims on `pop` and copies again on `push` as the heap's size moves
 * up and down.
 */

const INITIAL_CAPACITY = 1024;

export class ExpiryHeap {
  private times = new Float64Array(INITIAL_CAPACITY);
  /** Slots past `count` hold undefined, so a popped key is not kept alive. */
  private readonly keys: Array<string | undefined> = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(at: number, key: string): void {
    if (this.count === this.times.length) {
      const larger = new Float64Array(this.times.length * 2);
      larger.set(this.times);
      this.times = larger;
    }
    let i = this.count++;
    // Sift up: parents later than `at` move down into the hole, then `at` fills it.
    const times = this.times;
    const keys = this.keys;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (times[parent] <= at) break;
      times[i] = times[parent];
      keys[i] = keys[parent];
      i = parent;
    }
    times[i] = at;
    keys[i] = key;
  }

  /** Removes and returns the key of the earliest entry due at or before `now`, if any. */
  popDue(now: number): string | undefined {
    if (this.count === 0 || this.times[0] > now) return undefined;
    const times = this.times;
    const keys = this.keys;
    const top = keys[0] as string;
    const last = --this.count;
    const at = times[last];
    const key = keys[last];
    keys[last] = undefined;
    if (last > 0) {
      // Sift down: the earlier child moves up into the hole until the last entry fits.
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= last) break;
        const right = left + 1;
        const child = right < last && times[right] < times[left] ? right : left;
        if (times[child] >= at) break;
        times[i] = times[child];
        keys[i] = keys[child];
        i = child;
      }
      times[i] = at;
      keys[i] = key;
    }
    return top;
  }

  clear(): void {
    this.keys.fill(undefined, 0, this.count);
    this.count = 0;
  }
}
