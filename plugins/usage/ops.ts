/**
 * The usage plugin's atomic operations, each written twice side by side like the core's
 * (core/stores/atomic-ops.ts): a Lua script for Redis and a synchronous JS twin for the
 * memory store. test/plugins/usage/ops.test.ts runs every op on both stores.
 *
 * `usageRecord` is why they exist: everything a batch of events changes (the consumers'
 * records, the consumer and rank indexes, three calendar buckets and their expiries) in a
 * single round trip, so counting stays cheap on the hot path.
 */
import type { AtomicOp, KvData } from "../../core/stores/kv.ts";

/** The integer counters, in ARGV order; `processing_seconds` (a decimal) comes after them. */
const INTEGER_COUNTERS = ["requests", "jobs", "prompt_tokens", "completion_tokens", "cost_nanos"] as const;

/** ARGV values per record of `usageRecord` before its outcomes. */
const RECORD_ARGS = 9;

/**
 * Adds the counts of several consumers of one service type and one calendar day: a batch
 * of events, one round trip.
 * KEYS[1] consumer index (zset), KEYS[2] the type's rank (zset), KEYS[3] daily,
 * KEYS[4] weekly, KEYS[5] monthly bucket (hashes), KEYS[5 + i] the consumer hash of record i.
 * ARGV[1] retention ms (0 = none), ARGV[2] daily TTL ms, ARGV[3] weekly TTL ms,
 * ARGV[4] the consumer-hash field prefix (`<type>|`), ARGV[5..10] what the buckets get:
 * requests, jobs, prompt tokens, completion tokens, cost in nano-units (integers),
 * processing seconds (a decimal), the sums of the records' counts (the caller adds them up:
 * Lua would format a float sum with 14 digits); ARGV[11] the number n of outcome counters the
 * buckets get, then n pairs: counter (`outcome.<outcome>`, keys.ts), integer sum. Then per
 * record: consumer, now ms, requests, jobs, prompt tokens, completion tokens, cost nanos,
 * processing seconds, the number k of its outcome counters, then k pairs: counter, integer.
 * Zero counts write nothing (an absent field means "never tracked"); a record of zeros
 * changes nothing. A consumer hash gets the retention TTL only when this call created it;
 * bucket TTLs are set when the bucket has none, so neither is ever extended. The rank score
 * is set rather than added to when the type's `requests` field is new (the consumer's record
 * expired and restarted).
 * Reply: the number of records that wrote something.
 */
export const usageRecord: AtomicOp<number> = {
  name: "usageRecord",
  lua: `
local names = {'requests', 'jobs', 'prompt_tokens', 'completion_tokens', 'cost_nanos'}
local prefix = ARGV[4]
local written = 0
local outcomes = tonumber(ARGV[11])
local at = 12 + 2 * outcomes
for r = 6, #KEYS do
  local key = KEYS[r]
  local consumer = ARGV[at]
  local created = redis.call('EXISTS', key) == 0
  local fresh_type = redis.call('HEXISTS', key, prefix .. 'requests') == 0
  local wrote = false
  for i, name in ipairs(names) do
    local by = tonumber(ARGV[at + 1 + i])
    if by ~= 0 then
      redis.call('HINCRBY', key, prefix .. name, by)
      wrote = true
    end
  end
  if tonumber(ARGV[at + 7]) ~= 0 then
    redis.call('HINCRBYFLOAT', key, prefix .. 'processing_seconds', ARGV[at + 7])
    wrote = true
  end
  local own = tonumber(ARGV[at + 8])
  for o = at + 9, at + 7 + 2 * own, 2 do
    local by = tonumber(ARGV[o + 1])
    if by ~= 0 then
      redis.call('HINCRBY', key, prefix .. ARGV[o], by)
      wrote = true
    end
  end
  if wrote then
    written = written + 1
    redis.call('HSET', key, 'last_active', ARGV[at + 1])
    if created and tonumber(ARGV[1]) > 0 then redis.call('PEXPIRE', key, ARGV[1]) end
    redis.call('ZADD', KEYS[1], ARGV[at + 1], consumer)
    local requests = tonumber(ARGV[at + 2])
    if requests ~= 0 then
      if fresh_type then
        redis.call('ZADD', KEYS[2], requests, consumer)
      else
        redis.call('ZINCRBY', KEYS[2], requests, consumer)
      end
    end
  end
  at = at + 9 + 2 * own
end
local bucketed = false
for i, name in ipairs(names) do
  local by = tonumber(ARGV[4 + i])
  if by ~= 0 then
    for b = 3, 5 do redis.call('HINCRBY', KEYS[b], name, by) end
    bucketed = true
  end
end
if tonumber(ARGV[10]) ~= 0 then
  for b = 3, 5 do redis.call('HINCRBYFLOAT', KEYS[b], 'processing_seconds', ARGV[10]) end
  bucketed = true
end
for o = 12, 10 + 2 * outcomes, 2 do
  local by = tonumber(ARGV[o + 1])
  if by ~= 0 then
    for b = 3, 5 do redis.call('HINCRBY', KEYS[b], ARGV[o], by) end
    bucketed = true
  end
end
if bucketed then
  if redis.call('PTTL', KEYS[3]) == -1 then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
  if redis.call('PTTL', KEYS[4]) == -1 then redis.call('PEXPIRE', KEYS[4], ARGV[3]) end
end
return written
`,
  // Index loops and no argument arrays: it runs for every batch of the embedded store.
  js: (data, keys, args) => {
    const [index, rank, daily, weekly, monthly] = keys;
    const [retention, dailyTtl, weeklyTtl, prefix] = args;
    const outcomes = Number(args[10]);
    let written = 0;
    let at = 11 + 2 * outcomes;
    for (let r = 5; r < keys.length; r++) {
      const key = keys[r];
      const consumer = args[at];
      const now = args[at + 1];
      const own = Number(args[at + 8]);
      const next = at + RECORD_ARGS + 2 * own;
      const created = !data.exists(key);
      const freshType = data.hget(key, `${prefix}requests`) === null;
      let wrote = false;
      for (let i = 0; i < INTEGER_COUNTERS.length; i++) {
        const by = Number(args[at + 2 + i]);
        if (by === 0) continue;
        data.hincrBy(key, `${prefix}${INTEGER_COUNTERS[i]}`, by);
        wrote = true;
      }
      const seconds = Number(args[at + 7]);
      if (seconds !== 0) {
        data.hincrByFloat(key, `${prefix}processing_seconds`, seconds);
        wrote = true;
      }
      for (let o = at + RECORD_ARGS; o < next; o += 2) {
        const by = Number(args[o + 1]);
        if (by === 0) continue;
        data.hincrBy(key, `${prefix}${args[o]}`, by);
        wrote = true;
      }
      const requests = Number(args[at + 2]);
      at = next;
      if (!wrote) continue;
      written++;
      data.hset(key, { last_active: now });
      if (created && Number(retention) > 0) data.pexpire(key, Number(retention));
      data.zadd(index, Number(now), consumer);
      if (requests !== 0) data.zadd(rank, freshType ? requests : (data.zscore(rank, consumer) ?? 0) + requests, consumer);
    }
    let bucketed = false;
    for (let i = 0; i < INTEGER_COUNTERS.length; i++) {
      const by = Number(args[4 + i]);
      if (by === 0) continue;
      const name = INTEGER_COUNTERS[i];
      data.hincrBy(daily, name, by);
      data.hincrBy(weekly, name, by);
      data.hincrBy(monthly, name, by);
      bucketed = true;
    }
    const seconds = Number(args[9]);
    if (seconds !== 0) {
      data.hincrByFloat(daily, "processing_seconds", seconds);
      data.hincrByFloat(weekly, "processing_seconds", seconds);
      data.hincrByFloat(monthly, "processing_seconds", seconds);
      bucketed = true;
    }
    for (let o = 11; o < 11 + 2 * outcomes; o += 2) {
      const by = Number(args[o + 1]);
      if (by === 0) continue;
      data.hincrBy(daily, args[o], by);
      data.hincrBy(weekly, args[o], by);
      data.hincrBy(monthly, args[o], by);
      bucketed = true;
    }
    if (bucketed) {
      expireIfPersistent(data, daily, Number(dailyTtl));
      expireIfPersistent(data, weekly, Number(weeklyTtl));
    }
    return written;
  },
};

function expireIfPersistent(data: KvData, key: string, ttlMs: number): void {
  if (data.pttl(key) === -1) data.pexpire(key, ttlMs);
}

/**
 * Reads several hashes in one round trip.
 * KEYS[1..n] hashes. No ARGV.
 * Reply: one [field, value, field, value, ...] array per key ([] when it does not exist).
 */
export const hashesRead: AtomicOp<string[][]> = {
  name: "usageHashesRead",
  lua: `
local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('HGETALL', key) end
return out
`,
  js: (data, keys) => keys.map((key) => Object.entries(data.hgetall(key)).flat()),
};

/**
 * One page of a sorted set, highest score first (ties: the greater member first, as ZREVRANGE).
 * KEYS[1] sorted set. ARGV[1] offset, ARGV[2] page size (> 0).
 * Reply: [size of the whole set, member, member, ...].
 */
export const rankPage: AtomicOp<(number | string)[]> = {
  name: "usageRankPage",
  lua: `
local offset = tonumber(ARGV[1])
local members = redis.call('ZREVRANGE', KEYS[1], offset, offset + tonumber(ARGV[2]) - 1)
table.insert(members, 1, redis.call('ZCARD', KEYS[1]))
return members
`,
  js: (data, [key], [offset, size]) => {
    const members = data.zrangeByScore(key, -Infinity, Infinity).reverse();
    const start = Number(offset);
    return [members.length, ...members.slice(start, start + Number(size))];
  },
};

/**
 * Adds to the report groups of one service type and one calendar day (`group_by`).
 * KEYS[1] daily, KEYS[2] weekly, KEYS[3] monthly group hash. ARGV[1] daily TTL ms,
 * ARGV[2] weekly TTL ms, then pairs: field (`<dimension>|<key>|<counter>`, see keys.ts),
 * integer increment. TTLs as `usageRecord`'s buckets: set when the hash has none.
 * Reply: the number of fields added to.
 */
export const groupsAdd: AtomicOp<number> = {
  name: "usageGroupsAdd",
  lua: `
local added = 0
for i = 3, #ARGV, 2 do
  for b = 1, 3 do redis.call('HINCRBY', KEYS[b], ARGV[i], ARGV[i + 1]) end
  added = added + 1
end
if added > 0 then
  if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
  if redis.call('PTTL', KEYS[2]) == -1 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
end
return added
`,
  js: (data, [daily, weekly, monthly], args) => {
    let added = 0;
    for (let i = 2; i + 1 < args.length; i += 2) {
      const by = Number(args[i + 1]);
      data.hincrBy(daily, args[i], by);
      data.hincrBy(weekly, args[i], by);
      data.hincrBy(monthly, args[i], by);
      added++;
    }
    if (added > 0) {
      expireIfPersistent(data, daily, Number(args[0]));
      expireIfPersistent(data, weekly, Number(args[1]));
    }
    return added;
  },
};
