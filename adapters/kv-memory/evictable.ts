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
 * slots in the store's map and expiry heap, the string headers (measured: about 100 bytes of
 * heap per cached answer beyond its text on V8).
 */
export const ENTRY_OVERHEAD_BYTES = 100;

export class EvictableKeys {
  /** Key -> bytes, least recently used first. */
  private readonly sizes = new Map<string, number>();
  private total = 0;
  /** Keys dropped by `evicted` since the store was opened. */
  evictions = 0;

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

  /** Counts a key dropped to make room (after `removed`, which gave its bytes back). */
  evicted(): void {
    this.evictions++;
  }

  /** The least recently used key while the total is over the cap, else undefined. */
  nextToEvict(): string | undefined {
    if (this.total <= this.maxBytes) return undefined;
    return this.sizes.keys().next().value;
  }

  clear(): void {
    this.sizes.clear();
    this.total = 0;
  }
}
