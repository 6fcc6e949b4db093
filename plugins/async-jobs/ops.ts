/**
 * The job store's atomic operations, each written twice side by side like the core's
 * (core/stores/atomic-ops.ts): a Lua script for Redis and a synchronous JS twin for the
 * memory store. test/plugins/async-jobs/ops.test.ts runs every op on both stores.
 *
 * Why atomic: a record, its tombstone, its index entry and its queue entry are created or
 * changed together so a crash or a racing replica never sees half a job; the queue move
 * and the lease are taken together so a claimed job always has a lease the GC reaper can
 * watch; a status change checks the current status in the same step, so DELETE and a
 * relay can race without a cancelled job running or a finished job being cancelled.
 *
 * Optional keys come last in KEYS (Lua sees `nil`, the JS twin `undefined`). Record
 * fields travel as trailing ARGV name/value pairs.
 *
 * The terminal changes (jobFinish, jobCancel's pending -> cancelled) also add a job with a
 * callback_url to the notification outbox (keys.ts `jobs:notify-outbox`) in the same step:
 * from the moment a job ends, its webhook is on record even if the process dies before the
 * webhooks plugin persists the delivery.
 */
import { extendIndex, LUA_EXTEND_INDEX, LUA_SCHEDULE_IF_FIELD, scheduleIfField } from "../../core/stores/atomic-ops.ts";
import type { AtomicOp, KvData } from "../../core/stores/kv.ts";

function pairs(args: string[], from: number): Record<string, string> {
  const fields: Record<string, string> = {};
  for (let i = from; i + 1 < args.length; i += 2) fields[args[i]] = args[i + 1];
  return fields;
}

/**
 * Creates a job.
 * KEYS[1] record, KEYS[2] tombstone, KEYS[3] queue, KEYS[4] consumer index (optional).
 * ARGV[1] id, ARGV[2] record TTL ms, ARGV[3] tombstone TTL ms, ARGV[4] tombstone value,
 * ARGV[5] queue end ("head" for priority jobs, else "tail"), ARGV[6] index score
 * (created_at ms), ARGV[7] index prune bound (members scored at or below it are dropped,
 * at most 100 per call), ARGV[8..] record field/value pairs.
 * Reply: 1 when created, 0 when a record with that id already exists (nothing changed).
 */
export const jobCreate: AtomicOp<number> = {
  name: "jobCreate",
  lua: `${LUA_EXTEND_INDEX}
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 8))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[3])
if ARGV[5] == 'head' then
  redis.call('LPUSH', KEYS[3], ARGV[1])
else
  redis.call('RPUSH', KEYS[3], ARGV[1])
end
if KEYS[4] then
  redis.call('ZADD', KEYS[4], ARGV[6], ARGV[1])
  local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[7], 'LIMIT', 0, 100)
  for _, member in ipairs(stale) do
    redis.call('ZREM', KEYS[4], member)
  end
  extend_index(KEYS[4], ARGV[2])
end
return 1
`,
  js: (data, [record, tombstone, queue, index], args) => {
    const [id, ttl, tombTtl, tombValue, end, score, pruneBefore] = args;
    if (data.exists(record)) return 0;
    data.hset(record, pairs(args, 7));
    data.pexpire(record, Number(ttl));
    data.set(tombstone, tombValue, Number(tombTtl));
    if (end === "head") data.lpush(queue, id);
    else data.rpush(queue, id);
    if (index !== undefined) {
      data.zadd(index, Number(score), id);
      for (const member of data.zrangeByScore(index, -Infinity, Number(pruneBefore), 100)) data.zrem(index, member);
      extendIndex(data, index, Number(ttl));
    }
    return 1;
  },
};

/** Lua: the status change shared by jobTransition and jobFinish. Reply {applied, previous}. */
const LUA_TRANSITION = `${LUA_EXTEND_INDEX}
local function transition(record, tombstone, index, allowed, status, ttl, tomb_ttl, first_field)
  local current = redis.call('HGET', record, 'status')
  if not current then return {0, ''} end
  local ok = false
  for name in string.gmatch(allowed, '[^,]+') do
    if name == current then ok = true end
  end
  if not ok then return {0, current} end
  redis.call('HSET', record, 'status', status, unpack(ARGV, first_field))
  redis.call('PEXPIRE', record, ttl)
  redis.call('PEXPIRE', tombstone, tomb_ttl)
  extend_index(index, ttl)
  return {1, current}
end
`;

function transition(
  data: KvData,
  keys: { record: string; tombstone: string; index?: string },
  allowed: string,
  status: string,
  ttl: number,
  tombTtl: number,
  fields: Record<string, string>,
): [number, string] {
  const current = data.hget(keys.record, "status");
  if (current === null) return [0, ""];
  if (!allowed.split(",").includes(current)) return [0, current];
  data.hset(keys.record, { status, ...fields });
  data.pexpire(keys.record, ttl);
  data.pexpire(keys.tombstone, tombTtl);
  extendIndex(data, keys.index, ttl);
  return [1, current];
}

/**
 * Changes a job's status when it is one of the allowed ones.
 * KEYS[1] record, KEYS[2] tombstone, KEYS[3] consumer index (optional).
 * ARGV[1] allowed current statuses (comma-separated), ARGV[2] new status, ARGV[3] record
 * TTL ms, ARGV[4] tombstone TTL ms, ARGV[5..] more field/value pairs.
 * Reply: [1, previous status] when changed; [0, current status or "" when gone] otherwise.
 */
export const jobTransition: AtomicOp<[number, string]> = {
  name: "jobTransition",
  lua: `${LUA_TRANSITION}
return transition(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 5)
`,
  js: (data, [record, tombstone, index], args) =>
    transition(data, { record, tombstone, index }, args[0], args[1], Number(args[2]), Number(args[3]), pairs(args, 4)),
};

/**
 * A relay ends its claim: the status change (to a terminal status), the processing-list
 * entry, the lease, the cancel signal and the notification outbox entry, together. It acts
 * only while the caller's lease is held or has lapsed unclaimed: when another relay holds
 * the lease now (the GC reaper requeued the job and it was claimed again), nothing changes
 * and the reply is [0, "leased"].
 * KEYS[1] record, KEYS[2] tombstone, KEYS[3] processing list, KEYS[4] lease, KEYS[5]
 * cancel signal, KEYS[6] notification outbox, KEYS[7] consumer index (optional).
 * ARGV[1] job id, ARGV[2] lease token, ARGV[3] allowed statuses, ARGV[4] new status,
 * ARGV[5] record TTL ms, ARGV[6] tombstone TTL ms, ARGV[7] outbox score (sweep-after ms),
 * ARGV[8..] more field/value pairs.
 * When the status changed and the record has a callback_url, the id joins the outbox.
 * Reply: as jobTransition.
 */
export const jobFinish: AtomicOp<[number, string]> = {
  name: "jobFinish",
  lua: `${LUA_TRANSITION}${LUA_SCHEDULE_IF_FIELD}
local holder = redis.call('GET', KEYS[4])
if holder and holder ~= ARGV[2] then return {0, 'leased'} end
redis.call('LREM', KEYS[3], 0, ARGV[1])
redis.call('DEL', KEYS[4], KEYS[5])
local outcome = transition(KEYS[1], KEYS[2], KEYS[7], ARGV[3], ARGV[4], ARGV[5], ARGV[6], 8)
if outcome[1] == 1 then
  schedule_if_field(KEYS[1], 'callback_url', KEYS[6], ARGV[7], ARGV[1])
end
return outcome
`,
  js: (data, [record, tombstone, processing, lease, cancel, outbox, index], args) => {
    const [id, token, allowed, status, ttl, tombTtl, notifyAfter] = args;
    const holder = data.get(lease);
    if (holder !== null && holder !== token) return [0, "leased"];
    data.lrem(processing, 0, id);
    data.del(lease);
    data.del(cancel);
    const outcome = transition(data, { record, tombstone, index }, allowed, status, Number(ttl), Number(tombTtl), pairs(args, 7));
    if (outcome[0] === 1) scheduleIfField(data, record, "callback_url", outbox, Number(notifyAfter), id);
    return outcome;
  },
};

/**
 * DELETE /jobs/{type}/{id} (docs/design.md#cancelling-a-job): a pending job is cancelled and leaves
 * its queue at once (joining the notification outbox when it has a callback_url); a processing one
 * gets a cancel signal the relay acts on; others are left alone.
 * A pending job waiting for a retry leaves the retry set as well, so it never runs again.
 * KEYS[1] record, KEYS[2] tombstone, KEYS[3] queue, KEYS[4] cancel signal, KEYS[5]
 * notification outbox, KEYS[6] retry set, KEYS[7] consumer index (optional).
 * ARGV[1] id, ARGV[2] cancelled record TTL ms, ARGV[3] tombstone TTL ms, ARGV[4] signal
 * TTL ms, ARGV[5] outbox score (sweep-after ms), ARGV[6..] field/value pairs for a
 * cancelled record.
 * Reply: [status after the call, status before] ("" / "" when the record is gone).
 */
export const jobCancel: AtomicOp<[string, string]> = {
  name: "jobCancel",
  lua: `${LUA_EXTEND_INDEX}${LUA_SCHEDULE_IF_FIELD}
local current = redis.call('HGET', KEYS[1], 'status')
if not current then return {'', ''} end
if current == 'pending' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled', unpack(ARGV, 6))
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  redis.call('LREM', KEYS[3], 0, ARGV[1])
  redis.call('ZREM', KEYS[6], ARGV[1])
  extend_index(KEYS[7], ARGV[2])
  schedule_if_field(KEYS[1], 'callback_url', KEYS[5], ARGV[5], ARGV[1])
  return {'cancelled', current}
end
if current == 'processing' then
  redis.call('SET', KEYS[4], '1', 'PX', ARGV[4])
end
return {current, current}
`,
  js: (data, [record, tombstone, queue, cancel, outbox, retry, index], args) => {
    const [id, ttl, tombTtl, signalTtl, notifyAfter] = args;
    const current = data.hget(record, "status");
    if (current === null) return ["", ""];
    if (current === "pending") {
      data.hset(record, { status: "cancelled", ...pairs(args, 5) });
      data.pexpire(record, Number(ttl));
      data.pexpire(tombstone, Number(tombTtl));
      data.lrem(queue, 0, id);
      data.zrem(retry, id);
      extendIndex(data, index, Number(ttl));
      scheduleIfField(data, record, "callback_url", outbox, Number(notifyAfter), id);
      return ["cancelled", current];
    }
    if (current === "processing") data.set(cancel, "1", Number(signalTtl));
    return [current, current];
  },
};

/** Due retries moved to the queue per claim: bounds the work of one script. */
export const PROMOTE_BATCH = 100;

/**
 * Reliable-queue claim over the queues of several models, in one step for all of them: from
 * the model at index `from` on, round the list, the first queue with a job gives it. For each
 * model visited, first the retry set's due entries (score <= now, at most PROMOTE_BATCH,
 * earliest first) move to the queue head (a retried job was already next in line once; every
 * relay's claim does it, so a retry is due on time with any relay alive); then the queue's head
 * moves to its processing list and the job's lease is taken, so a claimed job always has a
 * lease (or the reaper sees it lapse). One round trip whatever the number of models: an idle
 * relay asks once per round, not once per model (docs/async-jobs.md#the-relay).
 * KEYS: per model, its queue, processing list and retry set (3 keys each, in the models' order).
 * ARGV[1] lease key prefix, ARGV[2] token, ARGV[3] lease ms, ARGV[4] now ms, ARGV[5] the index
 * of the model to start from. Reply: [the model's index, the job id], or null when every queue is empty.
 */
export const relayClaim: AtomicOp<[number, string] | null> = {
  name: "relayClaim",
  // The lease key is built from the popped id, so it cannot be passed in KEYS; on a cluster
  // its prefix gets the queues' hash tag (keyArgs), so it stays in the script's slot.
  keyArgs: [0],
  lua: `
local models = #KEYS / 3
local from = tonumber(ARGV[5])
for step = 0, models - 1 do
  local m = (from + step) % models
  local queue, processing, retry = KEYS[3 * m + 1], KEYS[3 * m + 2], KEYS[3 * m + 3]
  local due = redis.call('ZRANGEBYSCORE', retry, '-inf', ARGV[4], 'LIMIT', 0, ${PROMOTE_BATCH})
  for i = #due, 1, -1 do
    redis.call('ZREM', retry, due[i])
    redis.call('LPUSH', queue, due[i])
  end
  local id = redis.call('LMOVE', queue, processing, 'LEFT', 'RIGHT')
  if id then
    redis.call('SET', ARGV[1] .. id, ARGV[2], 'PX', ARGV[3])
    return {m, id}
  end
end
return false
`,
  js: (data, keys, [prefix, token, leaseMs, now, from]) => {
    const models = keys.length / 3;
    for (let step = 0; step < models; step++) {
      const m = (Number(from) + step) % models;
      const [queue, processing, retry] = [keys[3 * m], keys[3 * m + 1], keys[3 * m + 2]];
      const due = data.zrangeByScore(retry, -Infinity, Number(now), PROMOTE_BATCH);
      for (const member of due.reverse()) {
        data.zrem(retry, member);
        data.lpush(queue, member);
      }
      const id = data.lpop(queue);
      if (id === null) continue;
      data.rpush(processing, id);
      data.set(`${prefix}${id}`, token, Number(leaseMs));
      return [m, id];
    }
    return null;
  },
};

/**
 * A relay's attempt failed transiently and the job has attempts left (services[].retry):
 * the claim ends (processing-list entry and lease), the processing record is pending again
 * with the given fields and TTLs, and the id waits in the retry set until it is due
 * (relayClaim then moves it to the queue). It acts only while the caller's lease is held or
 * has lapsed unclaimed, and never on a job DELETE asked to stop: then nothing changes and
 * the caller finishes it as cancelled.
 * KEYS[1] record, KEYS[2] tombstone, KEYS[3] processing list, KEYS[4] lease, KEYS[5]
 * cancel signal, KEYS[6] retry set, KEYS[7] consumer index (optional).
 * ARGV[1] job id, ARGV[2] lease token, ARGV[3] due ms (the retry set score), ARGV[4]
 * record TTL ms, ARGV[5] tombstone TTL ms, ARGV[6..] more field/value pairs.
 * Reply: "scheduled"; "cancel" (cancel signal present, nothing changed); "leased" (another
 * relay holds the lease, nothing changed); "dropped" (the record is gone or not
 * processing: the claim was ended, nothing scheduled).
 */
export const jobRetry: AtomicOp<string> = {
  name: "jobRetry",
  lua: `${LUA_TRANSITION}
local holder = redis.call('GET', KEYS[4])
if holder and holder ~= ARGV[2] then return 'leased' end
if redis.call('EXISTS', KEYS[5]) == 1 then return 'cancel' end
redis.call('LREM', KEYS[3], 0, ARGV[1])
redis.call('DEL', KEYS[4])
local outcome = transition(KEYS[1], KEYS[2], KEYS[7], 'processing', 'pending', ARGV[4], ARGV[5], 6)
if outcome[1] == 0 then return 'dropped' end
redis.call('ZADD', KEYS[6], ARGV[3], ARGV[1])
return 'scheduled'
`,
  js: (data, [record, tombstone, processing, lease, cancel, retry, index], args) => {
    const [id, token, dueAt, ttl, tombTtl] = args;
    const holder = data.get(lease);
    if (holder !== null && holder !== token) return "leased";
    if (data.exists(cancel)) return "cancel";
    data.lrem(processing, 0, id);
    data.del(lease);
    const [applied] = transition(data, { record, tombstone, index }, "processing", "pending", Number(ttl), Number(tombTtl), pairs(args, 5));
    if (applied === 0) return "dropped";
    data.zadd(retry, Number(dueAt), id);
    return "scheduled";
  },
};

/**
 * A running job's heartbeat: the relay renews its lease and, in the same step, keeps the
 * job's record alive, so a job that takes longer than `lifecycle.job_ttl.pending` is not
 * expired (and its result thrown away) while a relay still works on it. The record, its
 * tombstone and its index entry are extended to at least the given TTLs, never shortened,
 * and only while the record is `processing` (a finished record keeps its own TTL).
 * A lapsed lease nobody took over is taken back.
 * KEYS[1] lease, KEYS[2] record, KEYS[3] tombstone, KEYS[4] consumer index (optional).
 * ARGV[1] lease token, ARGV[2] lease TTL ms, ARGV[3] record TTL ms, ARGV[4] tombstone TTL ms.
 * Reply: 1 when the caller holds the lease now, 0 when another relay does (nothing changed).
 */
export const leaseRenew: AtomicOp<number> = {
  name: "leaseRenew",
  lua: `${LUA_EXTEND_INDEX}
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('HGET', KEYS[2], 'status') == 'processing' then
  extend_index(KEYS[2], ARGV[3])
  extend_index(KEYS[3], ARGV[4])
  extend_index(KEYS[4], ARGV[3])
end
return 1
`,
  js: (data, [lease, record, tombstone, index], [token, leaseMs, ttl, tombTtl]) => {
    const holder = data.get(lease);
    if (holder !== null && holder !== token) return 0;
    data.set(lease, token, Number(leaseMs));
    if (data.hget(record, "status") === "processing") {
      extendIndex(data, record, Number(ttl));
      extendIndex(data, tombstone, Number(tombTtl));
      extendIndex(data, index, Number(ttl));
    }
    return 1;
  },
};

/**
 * A relay gives a claimed job back (shutting down): it leaves the processing list, goes to
 * the queue head (it was next in line) and a processing record is pending again. A job
 * with a cancel signal is not given back (its owner wants it stopped): nothing changes and
 * the caller finishes it as cancelled.
 * KEYS[1] record, KEYS[2] processing list, KEYS[3] queue, KEYS[4] lease, KEYS[5] cancel signal.
 * ARGV[1] id, ARGV[2] lease token.
 * Reply: 1 requeued; 2 cancel signal present (nothing changed); 0 another relay holds the
 * lease, or the record is gone or finished (the claim is dropped).
 */
export const jobRelease: AtomicOp<number> = {
  name: "jobRelease",
  lua: `
local holder = redis.call('GET', KEYS[4])
if holder and holder ~= ARGV[2] then return 0 end
if redis.call('EXISTS', KEYS[5]) == 1 then return 2 end
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('DEL', KEYS[4])
local status = redis.call('HGET', KEYS[1], 'status')
if status ~= 'pending' and status ~= 'processing' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'pending')
redis.call('LPUSH', KEYS[3], ARGV[1])
return 1
`,
  js: (data, [record, processing, queue, lease, cancel], [id, token]) => {
    const holder = data.get(lease);
    if (holder !== null && holder !== token) return 0;
    if (data.exists(cancel)) return 2;
    data.lrem(processing, 0, id);
    data.del(lease);
    const status = data.hget(record, "status");
    if (status !== "pending" && status !== "processing") return 0;
    data.hset(record, { status: "pending" });
    data.lpush(queue, id);
    return 1;
  },
};
