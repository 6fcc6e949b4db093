/**
 * The named atomic operations, each written twice side by side: Lua for Redis and a
 * synchronous JS twin for the memory store. The two must stay semantically identical;
 * the contract suite (test/adapters/kv-contract.test.ts) runs every op on both stores.
 *
 * Rules that keep the twins in step:
 * - Lua turns a number reply into an integer (truncating), so a fractional result is
 *   returned as a string by both twins.
 * - Lua ends an array at its first nil, so arrays never contain null.
 * - ARGV values arrive as strings on both sides; the JS twin parses them the way the
 *   Redis command it stands in for would (via the KvData methods, which throw the same
 *   errors Redis does).
 */
import type { AtomicOp, KvData } from "./kv.ts";

/**
 * The JS side of Lua's `tonumber(redis.call('GET', key) or '0')`: 0 when absent, and a
 * failure (Lua would fail comparing nil) when the value is not a number.
 */
function readCounter(data: KvData, key: string): number {
  const text = data.get(key);
  if (text === null) return 0;
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) throw new Error(`ERR counter ${key} does not hold a number`);
  return value;
}

/**
 * Fixed-window counter, integer increments.
 * KEYS[1] counter. ARGV[1] increment (integer), ARGV[2] window length ms.
 * The window starts at the first increment: the TTL is set only when the key has none,
 * so later increments in the same window never extend it.
 * Reply: [new value, remaining window ms].
 */
export const windowIncrement: AtomicOp<[number, number]> = {
  name: "windowIncrement",
  lua: `
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {value, ttl}
`,
  js: (data, [key], [by, windowMs]) => {
    const value = data.incrBy(key, Number(by));
    let ttl = data.pttl(key);
    if (ttl < 0) {
      data.pexpire(key, Number(windowMs));
      ttl = Number(windowMs);
    }
    return [value, ttl];
  },
};

/**
 * Fixed-window counter, fractional increments (token or cost budgets).
 * KEYS[1] counter. ARGV[1] increment (float), ARGV[2] window length ms.
 * TTL rule as `windowIncrement`.
 * Reply: [new value as a decimal string, remaining window ms]. Redis formats the value
 * with long-double precision, so the string can differ from JS's in the last digits for
 * values that are not exact binary fractions; parse it, do not compare it as text.
 */
export const windowIncrementFloat: AtomicOp<[string, number]> = {
  name: "windowIncrementFloat",
  lua: `
local value = redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  ttl = tonumber(ARGV[2])
end
return {value, ttl}
`,
  js: (data, [key], [by, windowMs]) => {
    const value = data.incrByFloat(key, Number(by));
    let ttl = data.pttl(key);
    if (ttl < 0) {
      data.pexpire(key, Number(windowMs));
      ttl = Number(windowMs);
    }
    return [String(value), ttl];
  },
};

/**
 * Counting semaphore acquire.
 * KEYS[1] counter. ARGV[1] limit, ARGV[2] safety TTL ms (refreshed on every acquire, so
 * slots held by a crashed replica free themselves once nobody acquires for that long).
 * Reply: the new count when a slot was taken, -1 when the semaphore is full (nothing changed).
 */
export const semaphoreAcquire: AtomicOp<number> = {
  name: "semaphoreAcquire",
  lua: `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then
  local count = redis.call('INCR', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return count
end
return -1
`,
  js: (data, [key], [limit, ttlMs]) => {
    if (readCounter(data, key) >= Number(limit)) return -1;
    const count = data.incrBy(key, 1);
    data.pexpire(key, Number(ttlMs));
    return count;
  },
};

/**
 * Counting semaphore release.
 * KEYS[1] counter. No ARGV.
 * Never goes below zero (a release after the safety TTL fired is harmless); the key is
 * deleted when it reaches zero. Reply: the new count.
 */
export const semaphoreRelease: AtomicOp<number> = {
  name: "semaphoreRelease",
  lua: `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current <= 1 then
  redis.call('DEL', KEYS[1])
  return 0
end
return redis.call('DECR', KEYS[1])
`,
  js: (data, [key]) => {
    if (readCounter(data, key) <= 1) {
      data.del(key);
      return 0;
    }
    return data.incrBy(key, -1);
  },
};

/**
 * Takes the due members of a schedule.
 * KEYS[1] sorted set. ARGV[1] now (max score, inclusive), ARGV[2] max members, ARGV[3] (optional)
 * a lease: the time until which the members taken stay in the set.
 * Replies the members with score <= now, lowest score first, at most max, and removes them; with
 * a lease it gives them that score instead, so a caller that dies before it has done with a
 * member leaves it due again when the lease runs out (a member is removed only when its work is
 * done). Two callers never receive the same member while its lease lasts.
 */
export const claimDue: AtomicOp<string[]> = {
  name: "claimDue",
  // One member at a time: unpack() of a long reply would overflow the Lua stack.
  lua: `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, member in ipairs(due) do
  if ARGV[3] then
    redis.call('ZADD', KEYS[1], ARGV[3], member)
  else
    redis.call('ZREM', KEYS[1], member)
  end
end
return due
`,
  js: (data, [key], [now, max, leaseUntil]) => {
    const due = data.zrangeByScore(key, -Infinity, Number(now), Number(max));
    for (const member of due) {
      if (leaseUntil === undefined) data.zrem(key, member);
      else data.zadd(key, Number(leaseUntil), member);
    }
    return due;
  },
};

/**
 * Releases a lease only while we still hold it.
 * KEYS[1] lease key. ARGV[1] the holder token the lease was taken with.
 * Reply: 1 when the key held the token and was deleted, 0 otherwise.
 */
export const compareAndDelete: AtomicOp<number> = {
  name: "compareAndDelete",
  lua: `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`,
  js: (data, [key], [token]) => (data.get(key) === token ? data.del(key) : 0),
};

/**
 * Extends a lease only while we still hold it.
 * KEYS[1] lease key. ARGV[1] holder token, ARGV[2] new TTL ms.
 * Reply: 1 when the key held the token and its TTL was set, 0 otherwise.
 */
export const compareAndExpire: AtomicOp<number> = {
  name: "compareAndExpire",
  lua: `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`,
  js: (data, [key], [token, ttlMs]) => (data.get(key) === token && data.pexpire(key, Number(ttlMs)) ? 1 : 0),
};

/**
 * A building block for scripts, not an operation of its own: the Lua function
 * `extend_index(key, ttl)` and its JS twin `extendIndex`. They extend a key's TTL to at least
 * `ttl` ms; they never shorten it and never create the key (a missing key is left alone).
 */
export const LUA_EXTEND_INDEX = `
local function extend_index(key, ttl)
  if not key then return end
  local current = redis.call('PTTL', key)
  if current == -1 or (current >= 0 and current < tonumber(ttl)) then
    redis.call('PEXPIRE', key, ttl)
  end
end
`;

export function extendIndex(data: KvData, key: string | undefined, ttl: number): void {
  if (key === undefined) return;
  const current = data.pttl(key);
  if (current === -1 || (current >= 0 && current < ttl)) data.pexpire(key, ttl);
}

/**
 * A building block for scripts, not an operation of its own: the Lua function
 * `schedule_if_field(hash, field, zset, score, member)` and its JS twin `scheduleIfField`.
 * They add `member` to the sorted set `zset` with `score` when the hash's `field` is set and
 * not empty, so a status change can enqueue follow-up work (the job store's notification
 * outbox) in the same step, decided by the stored record rather than by the caller.
 */
export const LUA_SCHEDULE_IF_FIELD = `
local function schedule_if_field(hash, field, zset, score, member)
  local value = redis.call('HGET', hash, field)
  if value and value ~= '' then
    redis.call('ZADD', zset, score, member)
  end
end
`;

export function scheduleIfField(data: KvData, hash: string, field: string, zset: string, score: number, member: string): void {
  const value = data.hget(hash, field);
  if (value !== null && value !== "") data.zadd(zset, score, member);
}
