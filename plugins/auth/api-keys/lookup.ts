/**
 * Key lookups with an in-process cache: a hit costs no store round trip, a miss one (the
 * `apikey:hash:` entry). Entries live `auth.api_key.cache_ttl`, which is therefore how long
 * another replica may still accept a key this one disabled or revoked; this replica drops
 * its own entry at once. Unknown keys are cached too (bounded size), so a client retrying a
 * wrong key costs the store nothing.
 */
import type { HashEntry } from "./record.ts";
import type { KeyStore } from "./store.ts";

const MAX_ENTRIES = 10_000;

export class KeyLookup {
  private readonly cache = new Map<string, { entry: HashEntry | undefined; at: number }>();

  constructor(
    private readonly store: KeyStore,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  async find(hash: string): Promise<HashEntry | undefined> {
    const cached = this.cache.get(hash);
    if (cached && this.now() - cached.at < this.ttlMs) return cached.entry;
    const entry = await this.store.byHash(hash);
    this.cache.delete(hash);
    // Oldest first out: Map keeps insertion order.
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(hash, { entry, at: this.now() });
    return entry;
  }

  /** Forgets the given hashes (a change made on this replica applies here at once). */
  forget(...hashes: (string | undefined)[]): void {
    for (const hash of hashes) if (hash !== undefined) this.cache.delete(hash);
  }
}
