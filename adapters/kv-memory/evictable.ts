/**
 * The memory cap of the embedded store's evictable keys (`EVICTABLE_PREFIX`, the response
 * cache's answers): their size in bytes, least recently used first, so that the store can drop
 * the oldest-used ones when a write takes them over the cap. Without it, an answer cache with a
 * long TTL grows with the number of distinct requests until the process runs out of memory.
 *
 * One `Map` of key -> size, kept in use order by re-inserting on every access: its entries sit
 * in the map's own table (no object per key), so tracking costs the garbage collector next to
 * nothing next to the entries themselves.
 */

/**
 * Counted per key on top of the key's and the value's characters: the entry object, its
 * slots in the store's maps and expiry heap, string headers, boxed times. On V8 (Node 20) a
 * store of 60,000 one-KB answers held about 270 bytes per answer beyond their key and text.
 * (The process takes more than the counted total: the engine keeps room for garbage; see
 * docs/llm-proxy.md, "Response cache".)
 */
export const ENTRY_OVERHEAD_BYTES = 300;

export class EvictableKeys {
  /** Key -> bytes, least recently used first. */
  private readonly sizes = new Map<string, number>();
  private total = 0;
  private evictionCount = 0;
  /**
   * Walks `sizes` from its least recently used end, for the map's whole life. A fresh
   * `keys()` would start at the map's first slot and step over every slot deleted since its
   * last rehash (V8 keeps them until then): with eviction deleting from the front, that made
   * each eviction cost O(evictions so far), ~25 µs per write at 60,000 answers. A live
   * iterator passes each deleted slot once; keys re-inserted by `used` land behind it.
   */
  private cursor: Iterator<string> | undefined;

  constructor(
    readonly prefix: string,
    readonly maxBytes: number,
  ) {}

  covers(key: string): boolean {
    return key.startsWith(this.prefix);
  }

  /** Bytes held by the tracked keys. */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.sizes.size;
  }

  /** Keys handed out by `nextToEvict` since the store was opened. */
  get evictions(): number {
    return this.evictionCount;
  }

  /**
   * A string value was written under the key: it is now the most recently used. False when it
   * alone is over the cap (then it is not counted, and the caller drops it).
   */
  written(key: string, value: string): boolean {
    this.removed(key);
    const bytes = key.length + value.length + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.maxBytes) return false;
    this.sizes.set(key, bytes);
    this.total += bytes;
    return true;
  }

  /** The key was read: it moves to the most recently used end. */
  used(key: string): void {
    const bytes = this.sizes.get(key);
    if (bytes === undefined) return;
    this.sizes.delete(key);
    this.sizes.set(key, bytes);
  }

  /** The key is gone (deleted, expired, evicted) or no longer holds a string. */
  removed(key: string): void {
    const bytes = this.sizes.get(key);
    if (bytes === undefined) return;
    this.sizes.delete(key);
    this.total -= bytes;
  }

  /**
   * The least recently used key while the total is over the cap, else undefined. The caller
   * drops it at once (the cursor has passed it, and it is counted as evicted).
   */
  nextToEvict(): string | undefined {
    if (this.total <= this.maxBytes) return undefined;
    let next = this.cursor?.next();
    if (!next || next.done) {
      // A finished iterator stays finished, even once keys are added again.
      this.cursor = this.sizes.keys();
      next = this.cursor.next();
    }
    if (next.done) return undefined;
    this.evictionCount++;
    return next.value;
  }

  clear(): void {
    this.sizes.clear();
    this.cursor = undefined;
    this.total = 0;
  }
}
