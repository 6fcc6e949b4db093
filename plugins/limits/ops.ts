/**
 * The limits plugin's atomic operations, each written twice side by side like the core's
 * (core/stores/atomic-ops.ts): a Lua script for Redis and a synchronous JS twin for the
 * memory store. test/plugins/limits/ops.test.ts runs every op on both stores. The fixed
 * windows themselves use the core's `windowIncrement` / `windowIncrementFloat`, and a
 * sync slot is given back with the core's `semaphoreRelease`.
 */
import type { AtomicOp, KvData } from "../../core/stores/kv.ts";

/** Lua: lets a slot set live at least until its latest member's deadline (never shortens it). */
const LUA_COVER = `
local function cover(key, ttl)
  local current = redis.call('PTTL', key)
  if current < ttl then redis.call('PEXPIRE', key, ttl) end
end
`;

function cover(data: KvData, key: string, ttl: number): void {
  if (data.pttl(key) < ttl) data.pexpire(key, ttl);
}

/**
 * Takes a concurrent-job slot (spec 8.3).
 * KEYS[1] the consumer's slot set. ARGV[1] now ms, ARGV[2] limit, ARGV[3] member (a
 * reservation id), ARGV[4] the member's deadline ms.
 * Members whose deadline passed are dropped first (their submission or job is long gone).
 * Reply: [1, slots in use now] when taken, [0, slots in use] when the limit is reached.
 */
export const slotAcquire: AtomicOp<[number, number]> = {
  name: "limitsSlotAcquire",
  lua: `${LUA_COVER}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[2]) then return {0, count} end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
cover(KEYS[1], tonumber(ARGV[4]) - tonumber(ARGV[1]))
return {1, count + 1}
`,
  js: (data, [key], [now, limit, member, deadline]) => {
    for (const stale of data.zrangeByScore(key, -Infinity, Number(now))) data.zrem(key, stale);
    const count = data.zcard(key);
    if (count >= Number(limit)) return [0, count];
    data.zadd(key, Number(deadline), member);
    cover(data, key, Number(deadline) - Number(now));
    return [1, count + 1];
  },
};

/**
 * Turns a submission's reservation into its saved job's slot, which lives until the job
 * ends (`job.terminal` removes it) or its deadline passes.
 * KEYS[1] the consumer's slot set. ARGV[1] now ms, ARGV[2] reservation id, ARGV[3] job id,
 * ARGV[4] the job's deadline ms.
 * Reply: 1.
 */
export const slotConvert: AtomicOp<number> = {
  name: "limitsSlotConvert",
  lua: `${LUA_COVER}
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
cover(KEYS[1], tonumber(ARGV[4]) - tonumber(ARGV[1]))
return 1
`,
  js: (data, [key], [now, reservation, jobId, deadline]) => {
    data.zrem(key, reservation);
    data.zadd(key, Number(deadline), jobId);
    cover(data, key, Number(deadline) - Number(now));
    return 1;
  },
};

/**
 * Moves a saved job's slot deadline to its record's new expiry (the relay started it or
 * renewed its lease, or the GC reaper requeued it), so the slot lives exactly as long as
 * the job's record can. Only raises the deadline of a member that is still in the set: a
 * slot already released (the job ended) or dropped is not brought back.
 * KEYS[1] the consumer's slot set. ARGV[1] now ms, ARGV[2] job id, ARGV[3] the new deadline ms.
 * Reply: 1 when the deadline was raised, 0 otherwise (no such member, or already later).
 */
export const slotExtend: AtomicOp<number> = {
  name: "limitsSlotExtend",
  lua: `${LUA_COVER}
local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not score or tonumber(score) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
cover(KEYS[1], tonumber(ARGV[3]) - tonumber(ARGV[1]))
return 1
`,
  js: (data, [key], [now, jobId, deadline]) => {
    const score = data.zscore(key, jobId);
    if (score === null || score >= Number(deadline)) return 0;
    data.zadd(key, Number(deadline), jobId);
    cover(data, key, Number(deadline) - Number(now));
    return 1;
  },
};

/**
 * Takes one slot from the first pool that has one (the sync concurrency cap, spec 4.11:
 * a priority request tries the reserved pool, then the shared one).
 * KEYS[1..n] pool counters in order of preference. ARGV[1] safety TTL ms (refreshed on
 * the pool taken, as `semaphoreAcquire` does), ARGV[1+i] the limit of pool i.
 * Reply: the 1-based index of the pool taken, 0 when every pool is full (nothing changed).
 */
export const semaphoreAcquireFirst: AtomicOp<number> = {
  name: "limitsSemaphoreAcquireFirst",
  lua: `
for i, key in ipairs(KEYS) do
  local current = tonumber(redis.call('GET', key) or '0')
  if current < tonumber(ARGV[i + 1]) then
    redis.call('INCR', key)
    redis.call('PEXPIRE', key, ARGV[1])
    return i
  end
end
return 0
`,
  js: (data, keys, [ttlMs, ...limits]) => {
    for (const [index, key] of keys.entries()) {
      const text = data.get(key);
      const current = text === null ? 0 : Number(text);
      if (!Number.isFinite(current)) throw new Error(`ERR counter ${key} does not hold a number`);
      if (current < Number(limits[index])) {
        data.incrBy(key, 1);
        data.pexpire(key, Number(ttlMs));
        return index + 1;
      }
    }
    return 0;
  },
};

/**
 * Reads fixed-window counters with their remaining time, in one round trip.
 * KEYS[1..n] counters (strings). No ARGV.
 * Reply: [value 1, pttl 1, value 2, pttl 2, ...]; a value is "" when the key does not
 * exist (its pttl is then -2). Values stay strings: float counters must not be truncated.
 */
export const windowPeek: AtomicOp<(string | number)[]> = {
  name: "limitsWindowPeek",
  lua: `
local out = {}
for i, key in ipairs(KEYS) do
  out[2 * i - 1] = redis.call('GET', key) or ''
  out[2 * i] = redis.call('PTTL', key)
end
return out
`,
  js: (data, keys) => keys.flatMap((key) => [data.get(key) ?? "", data.pttl(key)]),
};

/**
 * The sync request's limit checks in one round trip (spec 4.5): counts the request in its
 * rate window (as `windowIncrement`), then reads the token-budget counters (as `windowPeek`).
 * KEYS[1] the rate counter when ARGV[1] is 1 (none when 0), then the token counters.
 * ARGV[1] 1 when the rate is counted, 0 when it is off; ARGV[2] the rate window length ms.
 * Reply: [rate count, rate window remaining ms (0 when off), value 1, pttl 1, ...] with the
 * token counters as `windowPeek` replies them. The caller judges the rate first, so a
 * request refused by it never looks at the budgets (whose counters are only read).
 */
export const limitsAdmit: AtomicOp<(string | number)[]> = {
  name: "limitsAdmit",
  lua: `
local out = {0, 0}
local first = 1
if ARGV[1] == '1' then
  local value = redis.call('INCRBY', KEYS[1], 1)
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    ttl = tonumber(ARGV[2])
  end
  out[1] = value
  out[2] = ttl
  first = 2
end
for i = first, #KEYS do
  out[#out + 1] = redis.call('GET', KEYS[i]) or ''
  out[#out + 1] = redis.call('PTTL', KEYS[i])
end
return out
`,
  js: (data, keys, [counted, windowMs]) => {
    // Filled by push from empty: a [0, 0] literal is copied when it grows (every request).
    const out: (string | number)[] = [];
    let first = 0;
    if (counted === "1") {
      const key = keys[0];
      const value = data.incrBy(key, 1);
      let ttl = data.pttl(key);
      if (ttl < 0) {
        data.pexpire(key, Number(windowMs));
        ttl = Number(windowMs);
      }
      out.push(value, ttl);
      first = 1;
    } else out.push(0, 0);
    for (let i = first; i < keys.length; i++) out.push(data.get(keys[i]) ?? "", data.pttl(keys[i]));
    return out;
  },
};
