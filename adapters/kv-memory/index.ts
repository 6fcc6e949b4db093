/**
 * The embedded key-value store: one process, not durable. Every call runs
 * synchronously against `MemoryData` inside an async function, so a thrown Redis-style
 * error surfaces as a rejected promise exactly as it would from the Redis store.
 */
import { type Clock, systemClock } from "../../core/clock.ts";
import type { AtomicOp, EvictableUsage, KvReply, KvStore, ListEnd, ScanPage } from "../../core/stores/kv.ts";
import { MemoryData, type MemoryDataOptions } from "./data.ts";

export { MemoryData, type MemoryDataOptions } from "./data.ts";

/**
 * Rejects JS-twin replies the Lua twin could not produce, so an op that only works on
 * the memory store fails in tests rather than in production on Redis: Lua truncates
 * numbers to integers and ends an array at its first nil.
 */
function checkLuaShaped(op: string, reply: KvReply, nested: boolean): void {
  if (typeof reply === "number" && !Number.isSafeInteger(reply)) {
    throw new Error(`atomic op ${op}: JS reply ${reply} is not an integer; Redis would truncate it (return a string)`);
  }
  if (reply === null && nested) {
    throw new Error(`atomic op ${op}: JS reply has null inside an array; Lua would end the array there`);
  }
  if (Array.isArray(reply)) { for (let i = 0; i < reply.length; i++) checkLuaShaped(op, reply[i], true); }
}

export class MemoryKv implements KvStore {
  readonly kind = "memory";
  private readonly data: MemoryData;

  constructor(clock: Clock = systemClock, options: MemoryDataOptions = {}) {
    this.data = new MemoryData(clock, options);
  }

  /** What the response cache's answers hold against the cap; undefined without one. */
  evictableUsage(): EvictableUsage | undefined {
    return this.data.evictableUsage();
  }

  async get(key: string): Promise<string | null> {
    return this.data.get(key);
  }

  async mget(keys: string[]): Promise<(string | null)[]> {
    return keys.map((key) => this.data.getOrNull(key));
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    this.data.set(key, value, ttlMs);
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    return this.data.setIfAbsent(key, value, ttlMs);
  }

  async del(...keys: string[]): Promise<number> {
    let removed = 0;
    for (const key of keys) removed += this.data.del(key);
    return removed;
  }

  async exists(key: string): Promise<boolean> {
    return this.data.exists(key);
  }

  async incrBy(key: string, by: number): Promise<number> {
    return this.data.incrBy(key, by);
  }

  async pexpire(key: string, ttlMs: number): Promise<boolean> {
    return this.data.pexpire(key, ttlMs);
  }

  async pttl(key: string): Promise<number> {
    return this.data.pttl(key);
  }

  async hget(key: string, field: string): Promise<string | null> {
    return this.data.hget(key, field);
  }

  async hset(key: string, fields: Record<string, string>): Promise<number> {
    return this.data.hset(key, fields);
  }

  async hdel(key: string, field: string): Promise<number> {
    return this.data.hdel(key, field);
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    return this.data.hgetall(key);
  }

  async hincrBy(key: string, field: string, by: number): Promise<number> {
    return this.data.hincrBy(key, field, by);
  }

  async hincrByFloat(key: string, field: string, by: number): Promise<number> {
    return this.data.hincrByFloat(key, field, by);
  }

  async push(key: string, value: string, end: ListEnd): Promise<number> {
    return end === "head" ? this.data.lpush(key, value) : this.data.rpush(key, value);
  }

  async pop(key: string, end: ListEnd): Promise<string | null> {
    return end === "head" ? this.data.lpop(key) : this.data.rpop(key);
  }

  async lrange(key: string, start: number, stop: number): Promise<string[]> {
    return this.data.lrange(key, start, stop);
  }

  async lrem(key: string, count: number, value: string): Promise<number> {
    return this.data.lrem(key, count, value);
  }

  async llen(key: string): Promise<number> {
    return this.data.llen(key);
  }

  async move(from: string, to: string, fromEnd: ListEnd, toEnd: ListEnd): Promise<string | null> {
    return this.data.move(from, to, fromEnd, toEnd);
  }

  async zadd(key: string, score: number, member: string): Promise<number> {
    return this.data.zadd(key, score, member);
  }

  async zrem(key: string, member: string): Promise<number> {
    return this.data.zrem(key, member);
  }

  async zscore(key: string, member: string): Promise<number | null> {
    return this.data.zscore(key, member);
  }

  async zcard(key: string): Promise<number> {
    return this.data.zcard(key);
  }

  async zrangeByScore(key: string, min: number, max: number, limit?: number): Promise<string[]> {
    return this.data.zrangeByScore(key, min, max, limit);
  }

  async scan(prefix: string, cursor: string, count = 100): Promise<ScanPage> {
    return this.data.scan(prefix, cursor, count);
  }

  async run<R extends KvReply>(op: AtomicOp<R>, keys: string[], args: (string | number)[]): Promise<R> {
    // Synchronous from here to the return: nothing else touches the data meanwhile.
    const reply = this.data.runAtomic(op, keys, args.map(String));
    checkLuaShaped(op.name, reply, false);
    return reply;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}
