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
 * Takes a concurrent-job slot (docs/design.md#concurrent-jobs).
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
 * Takes one slot from the first pool that has one (the sync concurrency cap,
 * docs/design.md#sync-concurrency-cap: a priority request tries the reserved pool, then the shared
 * one). KEYS[1..n] pool counters in order of preference. ARGV[1] safety TTL ms (refreshed on
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
 * The sync request's limit checks in one round trip: counts the request in its
 * rate window (as `windowIncrement`), then reads each budget's window and, for a budget that
 * holds, what requests in flight hold of it; when every check passes, the request's own holds
 * are added in the same step, so requests admitted at once cannot all take the same room.
 *
 * KEYS[1] the rate counter when ARGV[1] is 1 (none when 0), then per budget its window and its
 * holds (a sorted set: member `<amount>:<hold id>`, score the hold's deadline ms).
 * ARGV[1] 1 when the rate is counted, 0 when it is off; ARGV[2] the rate window length ms;
 * ARGV[3] the rate (a count above it is refused). Only with budgets: ARGV[4] now ms, ARGV[5]
 * the deadline of the holds added, ARGV[6] the hold id; then per budget its limit and its
 * hold: -1 = judged on what was spent alone, holds neither read nor added (a token budget's
 * rule unless it reserves); 0 or more = judged on spent + held, holds past their deadline
 * dropped first, and this amount held (when above 0) once the request is admitted.
 * Reply: [rate count, rate window remaining ms (0, 0 when off), 1 when admitted and the holds
 * added (0 when a check refused: nothing held), then per budget: its value ("" when no window
 * is open; a string, as `windowPeek`), its pttl, what is held of it (0 for a -1 budget)].
 * The caller judges from the reply again, for the answer: the rate first, then the budgets in
 * order.
 */
export const limitsAdmit: AtomicOp<(string | number)[]> = {
  name: "limitsAdmit",
  lua: `${LUA_COVER}
local out = {0, 0, 0}
local first = 1
local admitted = true
if ARGV[1] == '1' then
  local value = redis.call('INCRBY', KEYS[1], 1)
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    ttl = tonumber(ARGV[2])
  end
  out[1] = value
  out[2] = ttl
  if value > tonumber(ARGV[3]) then admitted = false end
  first = 2
end
local budgets = (#KEYS - first + 1) / 2
for i = 1, budgets do
  local window = KEYS[first + 2 * i - 2]
  local holds = KEYS[first + 2 * i - 1]
  local amount = tonumber(ARGV[6 + 2 * i])
  local spent = redis.call('GET', window) or ''
  local held = 0
  if amount >= 0 then
    redis.call('ZREMRANGEBYSCORE', holds, '-inf', ARGV[4])
    for _, member in ipairs(redis.call('ZRANGE', holds, 0, -1)) do
      held = held + tonumber(string.match(member, '^[^:]+'))
    end
  end
  out[#out + 1] = spent
  out[#out + 1] = redis.call('PTTL', window)
  out[#out + 1] = held
  if (tonumber(spent) or 0) + held >= tonumber(ARGV[5 + 2 * i]) then admitted = false end
end
if admitted then
  for i = 1, budgets do
    if tonumber(ARGV[6 + 2 * i]) > 0 then
      local holds = KEYS[first + 2 * i - 1]
      redis.call('ZADD', holds, ARGV[5], ARGV[6 + 2 * i] .. ':' .. ARGV[6])
      cover(holds, tonumber(ARGV[5]) - tonumber(ARGV[4]))
    end
  end
  out[3] = 1
end
return out
`,
  js: (data, keys, args) => {
    // Filled by push from empty: a literal is copied when it grows (every request).
    const out: (string | number)[] = [];
    let first = 0;
    let admitted = true;
    if (args[0] === "1") {
      const key = keys[0];
      const value = data.incrBy(key, 1);
      let ttl = data.pttl(key);
      if (ttl < 0) {
        data.pexpire(key, Number(args[1]));
        ttl = Number(args[1]);
      }
      out.push(value, ttl, 0);
      if (value > Number(args[2])) admitted = false;
      first = 1;
    } else out.push(0, 0, 0);
    const budgets = (keys.length - first) / 2;
    for (let i = 0; i < budgets; i++) {
      const window = keys[first + 2 * i];
      const holds = keys[first + 2 * i + 1];
      const amount = Number(args[7 + 2 * i]);
      const spent = data.get(window) ?? "";
      let held = 0;
      if (amount >= 0) {
        for (const stale of data.zrangeByScore(holds, -Infinity, Number(args[3]))) data.zrem(holds, stale);
        for (const member of data.zrangeByScore(holds, -Infinity, Infinity)) held += Number(member.slice(0, member.indexOf(":")));
      }
      out.push(spent, data.pttl(window), held);
      if ((Number(spent) || 0) + held >= Number(args[6 + 2 * i])) admitted = false;
    }
    if (admitted) {
      for (let i = 0; i < budgets; i++) {
        if (!(Number(args[7 + 2 * i]) > 0)) continue;
        const holds = keys[first + 2 * i + 1];
        data.zadd(holds, Number(args[4]), `${args[7 + 2 * i]}:${args[5]}`);
        cover(data, holds, Number(args[4]) - Number(args[3]));
      }
      out[2] = 1;
    }
    return out;
  },
};

/**
 * Replaces what a request held of its budgets with what its answer used, in one step: each
 * hold is removed (when still there: it may have expired) and the amount added to the budget's
 * window, opening it (for the window's length) when none is open, as `windowIncrement`.
 * KEYS per budget: its window, its holds. ARGV per budget: the hold's member, the amount to
 * add (integer; 0 adds nothing and opens no window), the window length ms.
 * Reply: the number of holds removed.
 */
export const budgetSettle: AtomicOp<number> = {
  name: "limitsBudgetSettle",
  lua: `
local removed = 0
for i = 1, #KEYS / 2 do
  removed = removed + redis.call('ZREM', KEYS[2 * i], ARGV[3 * i - 2])
  if tonumber(ARGV[3 * i - 1]) > 0 then
    redis.call('INCRBY', KEYS[2 * i - 1], ARGV[3 * i - 1])
    if redis.call('PTTL', KEYS[2 * i - 1]) < 0 then redis.call('PEXPIRE', KEYS[2 * i - 1], ARGV[3 * i]) end
  end
end
return removed
`,
  js: (data, keys, args) => {
    let removed = 0;
    for (let i = 0; i < keys.length / 2; i++) {
      removed += data.zrem(keys[2 * i + 1], args[3 * i]);
      const amount = Number(args[3 * i + 1]);
      if (!(amount > 0)) continue;
      data.incrBy(keys[2 * i], amount);
      if (data.pttl(keys[2 * i]) < 0) data.pexpire(keys[2 * i], Number(args[3 * i + 2]));
    }
    return removed;
  },
};
