/**
 * The files' atomic operations, each a Lua script for Redis beside its JS twin for the memory
 * store (core/stores/atomic-ops.ts says how the twins stay in step). Every key is a "batch:"
 * key: one hash slot on a Redis Cluster.
 */
import type { AtomicOp } from "../../../core/stores/kv.ts";

/**
 * Saves a file's record with its retention, indexes it under its owner and schedules its deletion.
 * KEYS[1] record, KEYS[2] the owner's index, KEYS[3] the deletion schedule.
 * ARGV[1] file id, ARGV[2] record JSON, ARGV[3] retention ms, ARGV[4] index score, ARGV[5] deletion due (ms).
 * Reply: 1.
 */
export const fileCreate: AtomicOp<number> = {
  name: "batchFileCreate",
  lua: `
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
return 1
`,
  js: (data, [record, index, schedule], [id, json, retentionMs, score, due]) => {
    data.set(record, json, Number(retentionMs));
    data.zadd(index, Number(score), id);
    data.zadd(schedule, Number(due), id);
    return 1;
  },
};

/**
 * Deletes a file's record and index entry, and makes its deletion due now, so its bytes are
 * removed by the caller, or by the sweep if the caller stops before that.
 * KEYS[1] record, KEYS[2] the owner's index, KEYS[3] the deletion schedule.
 * ARGV[1] file id, ARGV[2] now (ms).
 * Reply: 1 when the record existed, 0 when it was already gone (nothing changed).
 */
export const fileDelete: AtomicOp<number> = {
  name: "batchFileDelete",
  lua: `
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return 1
`,
  js: (data, [record, index, schedule], [id, now]) => {
    if (data.del(record) === 0) return 0;
    data.zrem(index, id);
    data.zadd(schedule, Number(now), id);
    return 1;
  },
};
