/**
 * Min-heap of (expiry time, key). Lazy expiry alone would keep keys that are written
 * with a TTL and never read again (idempotency records, leases) forever; popping the
 * heap on every operation reclaims them without a timer, so tests driving a manual
 * clock see the same behaviour as production.
 *
 * Entries are never updated in place: a key whose TTL changes gets a new entry and the
 * old one is discarded when popped (the caller re-checks the key's real expiry).
 */

interface Due {
  at: number;
  key: string;
}

export class ExpiryHeap {
  private readonly heap: Due[] = [];

  get size(): number {
    return this.heap.length;
  }

  push(at: number, key: string): void {
    const heap = this.heap;
    heap.push({ at, key });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent].at <= heap[i].at) break;
      this.swap(parent, i);
      i = parent;
    }
  }

  /** Removes and returns the key of the earliest entry due at or before `now`, if any. */
  popDue(now: number): string | undefined {
    const heap = this.heap;
    if (heap.length === 0 || heap[0].at > now) return undefined;
    const top = heap[0];
    const last = heap.pop() as Due;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < heap.length && heap[left].at < heap[smallest].at) smallest = left;
        if (right < heap.length && heap[right].at < heap[smallest].at) smallest = right;
        if (smallest === i) break;
        this.swap(smallest, i);
        i = smallest;
      }
    }
    return top.key;
  }

  /** Without a destructuring swap, which built two arrays per step. */
  private swap(a: number, b: number): void {
    const heap = this.heap;
    const held = heap[a];
    heap[a] = heap[b];
    heap[b] = held;
  }

  clear(): void {
    this.heap.length = 0;
  }
}
