/**
 * The usage plugin's atomic operations, each written twice side by side like the core's
 * (core/stores/atomic-ops.ts): a Lua script for Redis and a synchronous JS twin for the
 * memory store. test/plugins/usage/ops.test.ts runs every op on both stores.
 *
 * `usageRecord` is why they exist: everything one event changes (the consumer's record,
 * the consumer and rank indexes, three calendar buckets and their expiries) in a single
 * round trip, so counting stays cheap on the hot path.
 */
import type { AtomicOp, KvData } from "../../core/stores/kv.ts";

/** Integer counters, in ARGV order (ARGV[7..10]); `processing_seconds` (a float) is ARGV[11]. */
const INTEGER_COUNTERS = ["requests", "jobs", "prompt_tokens", "completion_tokens"] as const;

/**
 * Adds one event's counts.
 * KEYS[1] consumer hash, KEYS[2] consumer index (zset), KEYS[3] the type's rank (zset),
 * KEYS[4] daily, KEYS[5] weekly, KEYS[6] monthly bucket (hashes).
 * ARGV[1] consumer, ARGV[2] now ms, ARGV[3] retention ms (0 = none), ARGV[4] daily TTL ms,
 * ARGV[5] weekly TTL ms, ARGV[6] the consumer-hash field prefix (`<type>|`),
 * ARGV[7] requests, ARGV[8] jobs, ARGV[9] prompt tokens, ARGV[10] completion tokens
 * (integers), ARGV[11] processing seconds (a decimal).
 * Zero counts write nothing (an absent field means "never tracked"). The consumer hash
 * gets the retention TTL only when this call created it; bucket TTLs are set when the
 * bucket has none, so neither is ever extended. The rank score is set rather than added
 * to when the type's `requests` field is new (the consumer's record expired and restarted).
 * Reply: 1 when something was written, 0 when every count was zero.
 */
export const usageRecord: AtomicOp<number> = {
  name: "usageRecord",
  lua: `
local names = {'requests', 'jobs', 'prompt_tokens', 'completion_tokens'}
local prefix = ARGV[6]
local created = redis.call('EXISTS', KEYS[1]) == 0
local fresh_type = redis.call('HEXISTS', KEYS[1], prefix .. 'requests') == 0
local wrote = false
for i, name in ipairs(names) do
  local by = tonumber(ARGV[6 + i])
  if by ~= 0 then
    redis.call('HINCRBY', KEYS[1], prefix .. name, by)
    for b = 4, 6 do redis.call('HINCRBY', KEYS[b], name, by) end
    wrote = true
  end
end
if tonumber(ARGV[11]) ~= 0 then
  redis.call('HINCRBYFLOAT', KEYS[1], prefix .. 'processing_seconds', ARGV[11])
  for b = 4, 6 do redis.call('HINCRBYFLOAT', KEYS[b], 'processing_seconds', ARGV[11]) end
  wrote = true
end
if not wrote then return 0 end
redis.call('HSET', KEYS[1], 'last_active', ARGV[2])
if created and tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
local requests = tonumber(ARGV[7])
if requests ~= 0 then
  if fresh_type then
    redis.call('ZADD', KEYS[3], requests, ARGV[1])
  else
    redis.call('ZINCRBY', KEYS[3], requests, ARGV[1])
  end
end
if redis.call('PTTL', KEYS[4]) == -1 then redis.call('PEXPIRE', KEYS[4], ARGV[4]) end
if redis.call('PTTL', KEYS[5]) == -1 then redis.call('PEXPIRE', KEYS[5], ARGV[5]) end
return 1
`,
  js: (data, keys, args) => {
    const [consumerKey, index, rank, daily, weekly, monthly] = keys;
    const [consumer, now, retention, dailyTtl, weeklyTtl, prefix] = args;
    const buckets = [daily, weekly, monthly];
    const created = !data.exists(consumerKey);
    const freshType = data.hget(consumerKey, `${prefix}requests`) === null;
    let wrote = false;
    INTEGER_COUNTERS.forEach((name, i) => {
      const by = Number(args[6 + i]);
      if (by === 0) return;
      data.hincrBy(consumerKey, `${prefix}${name}`, by);
      for (const bucket of buckets) data.hincrBy(bucket, name, by);
      wrote = true;
    });
    const seconds = Number(args[10]);
    if (seconds !== 0) {
      data.hincrByFloat(consumerKey, `${prefix}processing_seconds`, seconds);
      for (const bucket of buckets) data.hincrByFloat(bucket, "processing_seconds", seconds);
      wrote = true;
    }
    if (!wrote) return 0;
    data.hset(consumerKey, { last_active: now });
    if (created && Number(retention) > 0) data.pexpire(consumerKey, Number(retention));
    data.zadd(index, Number(now), consumer);
    const requests = Number(args[6]);
    if (requests !== 0) data.zadd(rank, freshType ? requests : (data.zscore(rank, consumer) ?? 0) + requests, consumer);
    expireIfPersistent(data, daily, Number(dailyTtl));
    expireIfPersistent(data, weekly, Number(weeklyTtl));
    return 1;
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
