/**
 * API keys in the KV store (memory or Redis), shared by every replica.
 *
 * | key                    | type   | holds                                                              | TTL
 * |------------------------|--------|--------------------------------------------------------------------|-----
 * | apikey:id:<id>         | string | the key's record (JSON, with its secret's HMAC, never the secret)   | none
 * | apikey:hash:<hmac>     | string | a copy of the record, found by the HMAC of the secret a client sent | none; a rotated-out secret's: its grace + 30 days
 * | apikeys                | zset   | key id -> creation time (ms), for listing                           | none
 *
 * The request path reads one `apikey:hash:` entry (one round trip); the admin API writes the
 * record and each hash copy. A revoked key keeps its entries, so its use is answered
 * "revoked" rather than "unknown".
 */
import type { KvStore } from "../../../core/stores/kv.ts";
import type { HashEntry, KeyRecord } from "./record.ts";

const idKey = (id: string) => `apikey:id:${encodeURIComponent(id)}`;
const hashKey = (hash: string) => `apikey:hash:${hash}`;
const INDEX = "apikeys";
const REMEMBER_ROTATED_MS = 30 * 24 * 60 * 60 * 1000;

export class KeyStore {
  constructor(
    private readonly kv: KvStore,
    private readonly now: () => number,
  ) {}

  async byHash(hash: string): Promise<HashEntry | undefined> {
    const text = await this.kv.get(hashKey(hash));
    return text === null ? undefined : (JSON.parse(text) as HashEntry);
  }

  async byId(id: string): Promise<KeyRecord | undefined> {
    const text = await this.kv.get(idKey(id));
    return text === null ? undefined : (JSON.parse(text) as KeyRecord);
  }

  /** Writes the record and its hash copies (the previous secret's while it has one). */
  async save(record: KeyRecord, isNew = false): Promise<void> {
    const text = JSON.stringify(record);
    const writes: Promise<unknown>[] = [this.kv.set(idKey(record.id), text), this.kv.set(hashKey(record.hash), JSON.stringify({ record }))];
    if (record.previous_hash && record.previous_valid_until) {
      const ttl = Date.parse(record.previous_valid_until) - this.now() + REMEMBER_ROTATED_MS;
      writes.push(this.kv.set(hashKey(record.previous_hash), JSON.stringify({ record, valid_until: record.previous_valid_until }), Math.max(ttl, 1)));
    }
    if (isNew) writes.push(this.kv.zadd(INDEX, Date.parse(record.created_at), record.id));
    await Promise.all(writes);
  }

  /** Every key, oldest first (admin listing: filtered and paged by the caller). */
  async all(): Promise<KeyRecord[]> {
    const ids = await this.kv.zrangeByScore(INDEX, -Infinity, Infinity);
    if (ids.length === 0) return [];
    const texts = await this.kv.mget(ids.map(idKey));
    return texts.filter((t): t is string => t !== null).map((t) => JSON.parse(t) as KeyRecord);
  }
}
