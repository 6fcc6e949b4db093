/**
 * Key lookups with an in-process cache: a hit costs no store round trip, a miss one (the
 * `apikey:hash:` entry). Entries live `auth.api_key.cache_ttl`, which is therefore how long
 * another replica may still accept a key this one disabled or revoked; this replica drops
 * its own entry at once. Unknown keys are cached too (bounded size), so a client retrying a
 * wrong key costs the store nothing.
 *
 * While the store cannot answer (an error or a timeout), a key found in it before may still
 * be served from the cache up to `auth.api_key.stale_if_error` past the entry's expiry, so a
 * store outage does not lock out every caller once the cache expires. What the store says
 * next (a revocation made meanwhile) applies as soon as it answers again.
 */
import type { Logger } from "../../../core/log.ts";
import type { HashEntry } from "./record.ts";
import type { KeyStore } from "./store.ts";

const MAX_ENTRIES = 10_000;

export interface KeyLookupOptions {
  /** `auth.api_key.cache_ttl`, ms. */
  ttlMs: number;
  /** `auth.api_key.stale_if_error`, ms: 0 serves nothing stale (a store failure refuses the request). */
  staleIfErrorMs: number;
  now: () => number;
  log: Logger;
}

export class KeyLookup {
  private readonly cache = new Map<string, { entry: HashEntry | undefined; at: number }>();

  constructor(
    private readonly store: KeyStore,
    private readonly options: KeyLookupOptions,
  ) {}

  /** The hash's entry (undefined: no such key); throws when the store fails and nothing may be served in its place. */
  async find(hash: string): Promise<HashEntry | undefined> {
    const cached = this.cache.get(hash);
    const age = cached ? this.options.now() - cached.at : Infinity;
    if (cached && age < this.options.ttlMs) return cached.entry;
    let entry: HashEntry | undefined;
    try {
      entry = await this.store.byHash(hash);
    } catch (error) {
      // Only a key the store knew: an unknown one is not let in (nor refused) on old news.
      if (cached?.entry && age < this.options.ttlMs + this.options.staleIfErrorMs) {
        this.options.log.warn("api_key_served_stale", {
          error,
          message: "the key store cannot answer: a key it knew is served from the cache (auth.api_key.stale_if_error)",
        });
        return cached.entry;
      }
      throw error;
    }
    this.cache.delete(hash);
    // Oldest first out: Map keeps insertion order.
    if (this.cache.size >= MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(hash, { entry, at: this.options.now() });
    return entry;
  }

  /** Forgets the given hashes (a change made on this replica applies here at once). */
  forget(...hashes: (string | undefined)[]): void {
    for (const hash of hashes) if (hash !== undefined) this.cache.delete(hash);
  }
}
