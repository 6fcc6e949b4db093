/**
 * The memory store's data: strings, hashes, lists and sorted sets with optional
 * per-key expiry, following the Redis command semantics (including its error
 * messages) so code tested on the memory store behaves the same on Redis.
 *
 * Everything here is synchronous: an atomic operation's JS twin runs start to finish
 * without another caller interleaving, which is the memory store's whole atomicity story.
 */
import type { Clock } from "../../core/clock.ts";
import type { AtomicOp, EvictableUsage, KvData, KvReply, ListEnd, ScanPage } from "../../core/stores/kv.ts";
import { EvictableKeys } from "./evictable.ts";
import { ExpiryHeap } from "./expiry-heap.ts";
import { SortedSet } from "./sorted-set.ts";

/**
 * A string value, or a counter's number: INCRBY and HINCRBY (and their float twins) keep the
 * number and it is read as the string it stands for (`String(n)`, what Redis would answer).
 * A counter that a thousand consumers each bump now and then would otherwise leave a new
 * string per write that outlives the young generation, so the old one's collection costs a
 * full GC's share; a small integer is no object at all.
 */
type Stored = string | number;
const textOf = (value: Stored): string => (typeof value === "string" ? value : String(value));

interface Values {
  string: Stored;
  hash: Map<string, Stored>;
  list: string[];
  zset: SortedSet;
}
type TypeName = keyof Values;
type ValueOf<T extends TypeName> = Values[T];
type Value = { [T in TypeName]: { type: T; value: Values[T] } }[TypeName];
type Entry = Value & { expiresAt: number | undefined };

/**
 * Every entry is created whole, with all three fields: an entry copied from another object
 * and given `expiresAt` afterwards took ~200 bytes more per expiring key on Node 20 (a store
 * of 60,000 one-KB answers: 471 against 273 bytes each beyond key and text).
 */
function newEntry<T extends TypeName>(type: T, value: ValueOf<T>): Entry {
  return { type, value, expiresAt: undefined } as Entry;
}

const WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INTEGER = "ERR value is not an integer or out of range";
const NOT_FLOAT = "ERR value is not a valid float";
const OVERFLOW = "ERR increment or decrement would overflow";
const NAN_OR_INF = "ERR increment would produce NaN or Infinity";

/** Unfinished scans whose snapshots are kept; older ones fall back to a slower resume. */
const MAX_OPEN_SCANS = 16;

/** Expired keys reclaimed per operation, so one burst of expiries never stalls a caller. */
const SWEEP_BUDGET = 32;

/** Stale expiry entries tolerated beyond one per key before the heap is rebuilt. */
const EXPIRY_SLACK = 1024;

/** Redis's string2ll: optional minus, no leading zeros, no spaces, no plus sign. */
const INTEGER = /^(?:0|-?[1-9][0-9]*)$/;

function parseInteger(text: string, message: string): number {
  const n = Number(text);
  if (!INTEGER.test(text) || !Number.isSafeInteger(n)) throw new Error(message);
  return n;
}

function parseFloatValue(text: string, message: string): number {
  const n = Number(text);
  if (text.trim() !== text || text === "" || Number.isNaN(n)) throw new Error(message);
  return n;
}

/** A counter's current value: 0 when absent, as INCRBY reads it. */
function integerOf(value: Stored | undefined, message: string): number {
  if (value === undefined) return 0;
  if (typeof value === "string") return parseInteger(value, message);
  if (!Number.isSafeInteger(value)) throw new Error(message);
  return value;
}

/** A float counter's current value: 0 when absent, as INCRBYFLOAT reads it. */
function floatOf(value: Stored | undefined, message: string): number {
  if (value === undefined) return 0;
  return typeof value === "string" ? parseFloatValue(value, message) : value;
}

function requireInteger(n: number): void {
  if (!Number.isSafeInteger(n)) throw new Error(NOT_INTEGER);
}

function addIntegers(current: number, by: number): number {
  requireInteger(by);
  const result = current + by;
  if (!Number.isSafeInteger(result)) throw new Error(OVERFLOW);
  return result;
}

function addFloats(current: number, by: number): number {
  if (!Number.isFinite(by)) throw new Error(NOT_FLOAT);
  const result = current + by;
  if (!Number.isFinite(result)) throw new Error(NAN_OR_INF);
  return result;
}

/** SET PX only takes a positive integer; mirroring that keeps a bad TTL failing on both stores. */
function validateSetTtl(ttlMs: number | undefined): void {
  if (ttlMs === undefined) return;
  requireInteger(ttlMs);
  if (ttlMs <= 0) throw new Error("ERR invalid expire time in 'set' command");
}

export interface MemoryDataOptions {
  /**
   * String keys under `prefix` are dropped, least recently used first, when a write takes
   * their total size over `maxBytes` (the response cache's cap; see evictable.ts).
   */
  evictable?: { prefix: string; maxBytes: number };
}

export class MemoryData implements KvData {
  private readonly entries = new Map<string, Entry>();
  private readonly expiries = new ExpiryHeap();
  private readonly evictable: EvictableKeys | undefined;
  /** Sorted key snapshots of unfinished scans, oldest first. */
  private readonly scans = new Map<number, string[]>();
  private nextScanId = 1;
  /** The time the running atomic operation sees (`runAtomic`); undefined between operations. */
  private opTime: number | undefined;

  constructor(
    private readonly clock: Clock,
    options: MemoryDataOptions = {},
  ) {
    if (options.evictable) this.evictable = new EvictableKeys(options.evictable.prefix, options.evictable.maxBytes);
  }

  /** What the keys under the evictable prefix hold; undefined without a cap. */
  evictableUsage(): EvictableUsage | undefined {
    const evictable = this.evictable;
    if (!evictable) return undefined;
    return { bytes: evictable.bytes, keys: evictable.size, maxBytes: evictable.maxBytes, evicted: evictable.evictions };
  }

  /**
   * Runs an atomic operation's JS twin at one instant, as Redis runs a script: every key it
   * touches is live or expired as of the time it started, and expired keys are swept once for
   * it instead of on each of its key accesses (a usage batch makes dozens).
   */
  runAtomic<R extends KvReply>(op: AtomicOp<R>, keys: string[], args: string[]): R {
    const now = this.clock.now();
    this.sweep(now);
    this.opTime = now;
    try {
      return op.js(this, keys, args);
    } finally {
      this.opTime = undefined;
    }
  }

  // --- keys -------------------------------------------------------------------

  get(key: string): string | null {
    const value = this.read(key, "string");
    return value === undefined ? null : textOf(value);
  }

  /** MGET: a key holding another type reads as null rather than failing. */
  getOrNull(key: string): string | null {
    const entry = this.live(key);
    return entry?.type === "string" ? textOf(entry.value) : null;
  }

  set(key: string, value: string, ttlMs?: number): void {
    validateSetTtl(ttlMs);
    this.store(key, value, ttlMs);
  }

  setIfAbsent(key: string, value: string, ttlMs?: number): boolean {
    validateSetTtl(ttlMs);
    if (this.live(key)) return false;
    this.store(key, value, ttlMs);
    return true;
  }

  del(key: string): number {
    return this.live(key) && this.drop(key) ? 1 : 0;
  }

  exists(key: string): boolean {
    return this.live(key) !== undefined;
  }

  incrBy(key: string, by: number): number {
    const next = addIntegers(integerOf(this.read(key, "string"), NOT_INTEGER), by);
    this.writeString(key, next);
    return next;
  }

  incrByFloat(key: string, by: number): number {
    const next = addFloats(floatOf(this.read(key, "string"), NOT_FLOAT), by);
    this.writeString(key, next);
    return next;
  }

  pexpire(key: string, ttlMs: number): boolean {
    requireInteger(ttlMs);
    const entry = this.live(key);
    if (!entry) return false;
    // Redis deletes a key given a TTL that is already in the past.
    if (ttlMs <= 0) {
      this.drop(key);
      return true;
    }
    this.expireAt(key, entry, this.now() + ttlMs);
    return true;
  }

  pttl(key: string): number {
    const entry = this.live(key);
    if (!entry) return -2;
    return entry.expiresAt === undefined ? -1 : entry.expiresAt - this.now();
  }

  // --- hashes -----------------------------------------------------------------

  hget(key: string, field: string): string | null {
    const value = this.read(key, "hash")?.get(field);
    return value === undefined ? null : textOf(value);
  }

  hset(key: string, fields: Record<string, string>): number {
    const names = Object.keys(fields);
    // RedisKv skips an empty HSET (Redis would reject it as a syntax error); match it.
    if (names.length === 0) return 0;
    const target = this.read(key, "hash") ?? this.create(key, "hash", new Map<string, Stored>());
    let added = 0;
    for (const name of names) {
      if (!target.has(name)) added++;
      target.set(name, fields[name]);
    }
    return added;
  }

  hdel(key: string, field: string): number {
    const hash = this.read(key, "hash");
    if (!hash || !hash.delete(field)) return 0;
    if (hash.size === 0) this.drop(key);
    return 1;
  }

  hgetall(key: string): Record<string, string> {
    const all: Record<string, string> = {};
    this.read(key, "hash")?.forEach((value, field) => (all[field] = textOf(value)));
    return all;
  }

  hincrBy(key: string, field: string, by: number): number {
    const hash = this.read(key, "hash");
    const next = addIntegers(integerOf(hash?.get(field), "ERR hash value is not an integer"), by);
    (hash ?? this.create(key, "hash", new Map<string, Stored>())).set(field, next);
    return next;
  }

  hincrByFloat(key: string, field: string, by: number): number {
    const hash = this.read(key, "hash");
    const next = addFloats(floatOf(hash?.get(field), "ERR hash value is not a float"), by);
    (hash ?? this.create(key, "hash", new Map<string, Stored>())).set(field, next);
    return next;
  }

  // --- lists ------------------------------------------------------------------

  lpush(key: string, value: string): number {
    const list = this.read(key, "list") ?? this.create(key, "list", []);
    list.unshift(value);
    return list.length;
  }

  rpush(key: string, value: string): number {
    const list = this.read(key, "list") ?? this.create(key, "list", []);
    list.push(value);
    return list.length;
  }

  lpop(key: string): string | null {
    return this.popFrom(key, "head");
  }

  rpop(key: string): string | null {
    return this.popFrom(key, "tail");
  }

  lrange(key: string, start: number, stop: number): string[] {
    const list = this.read(key, "list") ?? [];
    const len = list.length;
    const from = Math.max(start < 0 ? len + start : start, 0);
    const to = Math.min(stop < 0 ? len + stop : stop, len - 1);
    return from > to ? [] : list.slice(from, to + 1);
  }

  lrem(key: string, count: number, value: string): number {
    requireInteger(count);
    const list = this.read(key, "list");
    if (!list) return 0;
    const limit = count === 0 ? Infinity : Math.abs(count);
    let removed = 0;
    if (count >= 0) {
      for (let i = 0; i < list.length && removed < limit;) {
        if (list[i] === value) {
          list.splice(i, 1);
          removed++;
        } else i++;
      }
    } else {
      for (let i = list.length - 1; i >= 0 && removed < limit; i--) {
        if (list[i] === value) {
          list.splice(i, 1);
          removed++;
        }
      }
    }
    if (list.length === 0) this.drop(key);
    return removed;
  }

  llen(key: string): number {
    return this.read(key, "list")?.length ?? 0;
  }

  /** LMOVE. The destination's type is checked before anything is popped, as Redis does. */
  move(from: string, to: string, fromEnd: ListEnd, toEnd: ListEnd): string | null {
    const source = this.read(from, "list");
    const existing = this.read(to, "list");
    if (!source) return null;
    const value = (fromEnd === "head" ? source.shift() : source.pop()) as string;
    // Rotating a list onto itself must not drop the key (and its TTL) in between.
    const target = from === to ? source : (existing ?? this.create(to, "list", []));
    if (toEnd === "head") target.unshift(value);
    else target.push(value);
    if (source.length === 0) this.drop(from);
    return value;
  }

  // --- sorted sets ------------------------------------------------------------

  zadd(key: string, score: number, member: string): number {
    if (Number.isNaN(score)) throw new Error(NOT_FLOAT);
    const zset = this.read(key, "zset") ?? this.create(key, "zset", new SortedSet());
    return zset.add(score, member);
  }

  zrem(key: string, member: string): number {
    const zset = this.read(key, "zset");
    if (!zset) return 0;
    const removed = zset.remove(member);
    if (zset.size === 0) this.drop(key);
    return removed;
  }

  zscore(key: string, member: string): number | null {
    return this.read(key, "zset")?.score(member) ?? null;
  }

  zcard(key: string): number {
    return this.read(key, "zset")?.size ?? 0;
  }

  zrangeByScore(key: string, min: number, max: number, limit?: number): string[] {
    if (limit !== undefined) requireInteger(limit);
    return this.read(key, "zset")?.rangeByScore(min, max, limit) ?? [];
  }

  // --- whole keyspace ---------------------------------------------------------

  /**
   * One page of live keys starting with `prefix`. The first call takes a sorted
   * snapshot of the matching keys and later pages walk it, so a scan costs one sort
   * rather than one per page. Keys added during a scan may be missed and keys removed
   * are skipped, which is what SCAN promises too.
   *
   * The cursor also carries the last key handed out: if the snapshot was evicted (too
   * many scans left unfinished), the scan resumes after that key instead of failing.
   */
  scan(prefix: string, cursor: string, count: number): ScanPage {
    requireInteger(count);
    if (count <= 0) throw new Error("ERR syntax error");
    let snapshot: string[];
    let index: number;
    let id: number;
    if (cursor === "0") {
      snapshot = this.matchingKeys(prefix, undefined);
      index = 0;
      id = this.nextScanId++;
    } else {
      const parsed = /^(\d+):(\d+):([\s\S]*)$/.exec(cursor);
      if (!parsed) throw new Error("ERR invalid cursor");
      id = Number(parsed[1]);
      const kept = this.scans.get(id);
      this.scans.delete(id);
      if (kept) {
        snapshot = kept;
        index = Number(parsed[2]);
      } else {
        snapshot = this.matchingKeys(prefix, parsed[3]);
        index = 0;
      }
    }
    const end = Math.min(index + count, snapshot.length);
    const keys = snapshot.slice(index, end).filter((key) => this.live(key) !== undefined);
    if (end >= snapshot.length) return { keys, cursor: "0" };
    this.scans.set(id, snapshot);
    if (this.scans.size > MAX_OPEN_SCANS) this.scans.delete(this.scans.keys().next().value as number);
    return { keys, cursor: `${id}:${end}:${snapshot[end - 1]}` };
  }

  /** Live keys with the prefix that sort after `after`, ascending. Drops expired keys on the way. */
  private matchingKeys(prefix: string, after: string | undefined): string[] {
    const now = this.now();
    this.sweep(now);
    const keys: string[] = [];
    for (const [key, entry] of this.entries) {
      if (entry.expiresAt !== undefined && entry.expiresAt <= now) {
        this.drop(key);
        continue;
      }
      if (key.startsWith(prefix) && (after === undefined || key > after)) keys.push(key);
    }
    return keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  clear(): void {
    this.entries.clear();
    this.expiries.clear();
    this.scans.clear();
    this.evictable?.clear();
  }

  // --- internals --------------------------------------------------------------

  /** The current time: the running atomic operation's, else the clock's. */
  private now(): number {
    return this.opTime ?? this.clock.now();
  }

  /** The key's entry if it exists and has not expired; an expired one is deleted here. */
  private live(key: string): Entry | undefined {
    // Inside an atomic operation the time was read and the heap swept when it started.
    let now = this.opTime;
    if (now === undefined) {
      now = this.clock.now();
      this.sweep(now);
    }
    const entry = this.entries.get(key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= now) {
      this.drop(key);
      return undefined;
    }
    if (entry && this.evictable?.covers(key)) this.evictable.used(key);
    return entry;
  }

  /** The key's value when it holds `type`, undefined when absent; WRONGTYPE otherwise. */
  private read<T extends TypeName>(key: string, type: T): ValueOf<T> | undefined {
    const entry = this.live(key);
    if (!entry) return undefined;
    if (entry.type !== type) throw new Error(WRONGTYPE);
    return entry.value as ValueOf<T>;
  }

  private create<T extends TypeName>(key: string, type: T, value: ValueOf<T>): ValueOf<T> {
    this.put(key, newEntry(type, value));
    return value;
  }

  /** Replaces the key's value (SET semantics: any previous TTL is dropped unless one is given). */
  private store(key: string, value: string, ttlMs: number | undefined): void {
    const entry = newEntry("string", value);
    this.put(key, entry);
    if (ttlMs !== undefined) this.expireAt(key, entry, this.now() + ttlMs);
  }

  /** INCR-family writes keep the key's TTL. */
  private writeString(key: string, value: Stored): void {
    const entry = this.entries.get(key);
    if (entry?.type === "string") {
      entry.value = value;
      this.accountWrite(key, entry);
    } else this.put(key, newEntry("string", value));
  }

  /** Every write of a whole entry goes through here (and every removal through `drop`) to keep the cap's accounting. */
  private put(key: string, entry: Entry): void {
    this.entries.set(key, entry);
    this.accountWrite(key, entry);
  }

  private accountWrite(key: string, entry: Entry): void {
    const evictable = this.evictable;
    if (!evictable?.covers(key)) return;
    // Only strings are counted (and so evicted): the cap is for cached answers.
    if (entry.type !== "string") return evictable.removed(key);
    // An answer larger than the whole cap is not kept, and costs the others nothing.
    if (!evictable.written(key, textOf(entry.value))) {
      this.drop(key);
      return;
    }
    for (let victim = evictable.nextToEvict(); victim !== undefined; victim = evictable.nextToEvict()) this.drop(victim);
  }

  private drop(key: string): boolean {
    this.evictable?.removed(key);
    return this.entries.delete(key);
  }

  private expireAt(key: string, entry: Entry, at: number): void {
    entry.expiresAt = at;
    this.expiries.push(at, key);
    // Keys whose TTL is renewed on every write (usage counters kept 400 days, limit windows)
    // leave one stale heap entry per renewal until its far-off time: without a rebuild the
    // heap would grow with the request count, not with the keys.
    if (this.expiries.size > 2 * this.entries.size + EXPIRY_SLACK) this.rebuildExpiries();
  }

  private rebuildExpiries(): void {
    this.expiries.clear();
    for (const [key, entry] of this.entries) if (entry.expiresAt !== undefined) this.expiries.push(entry.expiresAt, key);
  }

  /** Entries in the expiry heap (live keys with a TTL, plus stale ones): bounded by the key count. */
  get pendingExpiries(): number {
    return this.expiries.size;
  }

  private popFrom(key: string, end: ListEnd): string | null {
    const list = this.read(key, "list");
    if (!list) return null;
    const value = (end === "head" ? list.shift() : list.pop()) as string;
    if (list.length === 0) this.drop(key);
    return value;
  }

  private sweep(now: number): void {
    for (let i = 0; i < SWEEP_BUDGET; i++) {
      const key = this.expiries.popDue(now);
      if (key === undefined) return;
      const entry = this.entries.get(key);
      // The heap may hold a stale time for a key whose TTL was since changed or removed.
      if (entry?.expiresAt !== undefined && entry.expiresAt <= now) this.drop(key);
    }
  }
}
