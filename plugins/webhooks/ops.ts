/**
 * The webhooks plugin's atomic operations, each written twice side by side like the core's
 * (core/stores/atomic-ops.ts): a Lua script for Redis and a synchronous JS twin for the
 * memory store. test/plugins/webhooks/ops.test.ts runs every op on both stores.
 *
 * Why atomic: the job store names a job that ended with a callback_url in its notification
 * outbox until the delivery exists. Creating the delivery and taking the job off the
 * outbox in one step means there is never a moment when both or neither name it, so a
 * webhook is neither lost nor created twice by the outbox sweep.
 *
 * Optional keys come last in KEYS (Lua sees `nil`, the JS twin `undefined`).
 */
import type { AtomicOp } from "../../core/stores/kv.ts";

/**
 * Stores a new delivery and schedules it (its inline attempt's lease as due time), and
 * takes its job off the notification outbox.
 * KEYS[1] delivery record, KEYS[2] retry schedule, KEYS[3] notification outbox (optional:
 * absent when no job store runs here).
 * ARGV[1] delivery (= job) id, ARGV[2] record JSON, ARGV[3] record TTL ms, ARGV[4] due
 * time (ms), ARGV[5] "listed" to create only while the outbox still names the job (the
 * sweep: a job no longer listed already has its delivery, maybe delivered and gone), else "any".
 * The outbox entry is removed either way, so a job with a delivery is never swept again.
 * Reply: 1 when created; 0 when a delivery with that id exists, or "listed" and the job is not.
 */
export const deliveryCreate: AtomicOp<number> = {
  name: "deliveryCreate",
  lua: `
if KEYS[3] then
  local removed = redis.call('ZREM', KEYS[3], ARGV[1])
  if ARGV[5] == 'listed' and removed == 0 then return 0 end
end
if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
return 1
`,
  js: (data, [record, schedule, outbox], [id, json, ttl, dueAt, mode]) => {
    if (outbox !== undefined) {
      const removed = data.zrem(outbox, id);
      if (mode === "listed" && removed === 0) return 0;
    }
    if (!data.setIfAbsent(record, json, Number(ttl))) return 0;
    data.zadd(schedule, Number(dueAt), id);
    return 1;
  },
};

/**
 * Takes the due members of the notification outbox under a lease: they stay in it, due
 * again at the lease's end, so a sweeper that dies before creating their deliveries loses
 * nothing, and until then no other sweeper receives them.
 * KEYS[1] outbox. ARGV[1] now (max score, inclusive), ARGV[2] max members, ARGV[3] lease end (ms).
 * Reply: the members taken, lowest score first.
 */
export const outboxClaim: AtomicOp<string[]> = {
  name: "outboxClaim",
  lua: `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, member in ipairs(due) do
  redis.call('ZADD', KEYS[1], ARGV[3], member)
end
return due
`,
  js: (data, [outbox], [now, max, leaseUntil]) => {
    const due = data.zrangeByScore(outbox, -Infinity, Number(now), Number(max));
    for (const member of due) data.zadd(outbox, Number(leaseUntil), member);
    return due;
  },
};

/**
 * Redelivers one dead letter (`POST /-/webhooks/deadletter/redeliver`): takes the entry off
 * the dead-letter list and stores a fresh delivery due now, which the retry poll then
 * attempts (signed then, with a fresh timestamp). Taking the entry and creating the delivery
 * in one step means two operators redelivering at once send it once, and a failure between
 * the two can neither lose the dead letter nor duplicate it.
 * KEYS[1] dead-letter list, KEYS[2] delivery record, KEYS[3] retry schedule.
 * ARGV[1] the entry exactly as stored, ARGV[2] delivery (= job) id, ARGV[3] record JSON,
 * ARGV[4] record TTL ms, ARGV[5] due time (ms).
 * Reply: 1 redelivered; 0 the entry is no longer in the list; -1 a delivery of that job is
 * under way (the entry stays).
 */
export const deadLetterRedeliver: AtomicOp<number> = {
  name: "deadLetterRedeliver",
  lua: `
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then return 0 end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[2])
return 1
`,
  js: (data, [deadletter, record, schedule], [entry, id, json, ttl, dueAt]) => {
    if (data.exists(record)) return -1;
    if (data.lrem(deadletter, 1, entry) === 0) return 0;
    data.set(record, json, Number(ttl));
    data.zadd(schedule, Number(dueAt), id);
    return 1;
  },
};

/**
 * Dead-letters a delivery: appends its entry to the dead-letter list and forgets the delivery
 * (its record and its schedule entry) in one step. Pushed and forgotten apart, a process that
 * died in between left the delivery to be claimed again: attempted once more, or dead-lettered
 * a second time.
 * KEYS[1] dead-letter list, KEYS[2] delivery record, KEYS[3] retry schedule.
 * ARGV[1] the entry JSON, ARGV[2] delivery (= job) id.
 */
export const deadLetterTake: AtomicOp<number> = {
  name: "deadLetterTake",
  lua: `
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
`,
  js: (data, [deadletter, record, schedule], [entry, id]) => {
    data.rpush(deadletter, entry);
    data.del(record);
    data.zrem(schedule, id);
    return 1;
  },
};
