/**
 * The key-value store contract. Two implementations live in `adapters/`: an embedded
 * in-memory store (one process, not durable) and Redis (node-redis).
 *
 * Simple commands are methods. Anything that must be atomic across replicas is an
 * `AtomicOp`: one named operation written twice side by side, a Lua script for Redis
 * and a synchronous JS function for the memory store (single-threaded, so a synchronous
 * function cannot interleave with another). See `core/stores/atomic-ops.ts`.
 *
 * Times are milliseconds. A TTL of `undefined` means "no expiry".
 */

/**
 * Keys under this prefix hold data that can be rebuilt (the response cache's answers): the
 * embedded store drops them, least recently used first, past `redis.embedded_cache_max_mb`.
 * Nothing else may be written under it.
 */
export const EVICTABLE_PREFIX = "cache:";

/** A value an atomic operation may return: the subset both Lua and JS can represent. */
export type KvReply = string | number | null | KvReply[];

/**
 * The synchronous data model the JS twin of an atomic operation runs against.
 * Method semantics follow the Redis commands of the same name.
 */
export interface KvData {
  get(key: string): string | null;
  set(key: string, value: string, ttlMs?: number): void;
  /** SET NX: true when the key was absent and is now set. */
  setIfAbsent(key: string, value: string, ttlMs?: number): boolean;
  del(key: string): number;
  exists(key: string): boolean;
  incrBy(key: string, by: number): number;
  incrByFloat(key: string, by: number): number;
  /** Sets a TTL on an existing key; false when the key does not exist. */
  pexpire(key: string, ttlMs: number): boolean;
  /** Remaining TTL in ms; -1 when the key has no TTL, -2 when it does not exist. */
  pttl(key: string): number;

  hget(key: string, field: string): string | null;
  hset(key: string, fields: Record<string, string>): number;
  hdel(key: string, field: string): number;
  hgetall(key: string): Record<string, string>;
  hincrBy(key: string, field: string, by: number): number;
  hincrByFloat(key: string, field: string, by: number): number;

  lpush(key: string, value: string): number;
  rpush(key: string, value: string): number;
  lpop(key: string): string | null;
  rpop(key: string): string | null;
  /** Inclusive range; negative indexes count from the end, as in Redis. */
  lrange(key: string, start: number, stop: number): string[];
  /** Removes up to |count| occurrences (0 = all). */
  lrem(key: string, count: number, value: string): number;
  llen(key: string): number;

  zadd(key: string, score: number, member: string): number;
  zrem(key: string, member: string): number;
  zscore(key: string, member: string): number | null;
  zcard(key: string): number;
  /** Members with min <= score <= max, ascending by score, at most `limit`. */
  zrangeByScore(key: string, min: number, max: number, limit?: number): string[];
}

/** Which end of a list. `head` is LPUSH/LPOP, `tail` is RPUSH/RPOP. */
export type ListEnd = "head" | "tail";

/**
 * A named atomic operation. `lua` receives KEYS and ARGV exactly as `js` receives
 * `keys` and `args`; both must return the same `KvReply`.
 */
export interface AtomicOp<R extends KvReply = KvReply> {
  readonly name: string;
  readonly lua: string;
  readonly js: (data: KvData, keys: string[], args: string[]) => R;
  /**
   * Positions in `args` (0-based) holding a key name or a key-name prefix the script builds
   * keys from: on a Redis Cluster they get the same hash tag as KEYS (core/stores/hash-tags.ts).
   * A key built this way must belong to the same owner as KEYS[1].
   */
  readonly keyArgs?: readonly number[];
}

/** What the embedded store's evictable keys hold against its cap (see `EVICTABLE_PREFIX`). */
export interface EvictableUsage {
  bytes: number;
  keys: number;
  maxBytes: number;
  /** Keys dropped to stay under the cap since the store was opened. */
  evicted: number;
}

export interface ScanPage {
  keys: string[];
  /** "0" when the scan is complete. */
  cursor: string;
}

export interface KvStore {
  /** "memory" or "redis", for logs and metrics. */
  readonly kind: string;
  /** The embedded store only: its cache cap's accounting, undefined without a cap (Redis keeps its own memory). */
  evictableUsage?(): EvictableUsage | undefined;

  get(key: string): Promise<string | null>;
  mget(keys: string[]): Promise<(string | null)[]>;
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  /** Atomic "reserve key if absent" (SET NX PX). */
  setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean>;
  del(...keys: string[]): Promise<number>;
  exists(key: string): Promise<boolean>;
  incrBy(key: string, by: number): Promise<number>;
  pexpire(key: string, ttlMs: number): Promise<boolean>;
  pttl(key: string): Promise<number>;

  hget(key: string, field: string): Promise<string | null>;
  hset(key: string, fields: Record<string, string>): Promise<number>;
  hdel(key: string, field: string): Promise<number>;
  hgetall(key: string): Promise<Record<string, string>>;
  hincrBy(key: string, field: string, by: number): Promise<number>;
  hincrByFloat(key: string, field: string, by: number): Promise<number>;

  push(key: string, value: string, end: ListEnd): Promise<number>;
  pop(key: string, end: ListEnd): Promise<string | null>;
  lrange(key: string, start: number, stop: number): Promise<string[]>;
  lrem(key: string, count: number, value: string): Promise<number>;
  llen(key: string): Promise<number>;
  /** Atomically pops from `from` and pushes onto `to` (LMOVE). Null when `from` is empty. */
  move(from: string, to: string, fromEnd: ListEnd, toEnd: ListEnd): Promise<string | null>;

  zadd(key: string, score: number, member: string): Promise<number>;
  zrem(key: string, member: string): Promise<number>;
  zscore(key: string, member: string): Promise<number | null>;
  zcard(key: string): Promise<number>;
  zrangeByScore(key: string, min: number, max: number, limit?: number): Promise<string[]>;

  /** One page of keys starting with `prefix` (SCAN MATCH prefix*). Bounded work per call. */
  scan(prefix: string, cursor: string, count?: number): Promise<ScanPage>;

  /** Runs a named atomic operation. */
  run<R extends KvReply>(op: AtomicOp<R>, keys: string[], args: (string | number)[]): Promise<R>;

  ping(): Promise<void>;
  close(): Promise<void>;
}
