/**
 * The GC's atomic operations, each written twice side by side like the core's
 * (core/stores/atomic-ops.ts): a Lua script for Redis and a synchronous JS twin for the
 * memory store. test/plugins/gc/ops.test.ts runs every op on both stores.
 *
 * Why atomic: every replica runs the GC, and relays claim and finish jobs at the same
 * time. Each op checks its condition and acts in one step, and each decision hinges on an
 * LREM that removed the entry: of N replicas acting on one entry, exactly one sees the
 * removal and acts, the others find nothing to do.
 *
 * Optional keys come last in KEYS (Lua sees `nil`, the JS twin `undefined`).
 *
 * A job the GC fails joins the job store's notification outbox (core/jobs/keys.ts) in the
 * same step when it has a callback_url, as on every terminal change, so its webhook is on
 * record before `job.terminal` is emitted.
 */
import { extendIndex, LUA_EXTEND_INDEX, LUA_SCHEDULE_IF_FIELD, scheduleIfField } from "../../core/stores/atomic-ops.ts";
import type { AtomicOp } from "../../core/stores/kv.ts";

/** What `gcReap` did with one processing-list entry. */
export type ReapOutcome =
  /** The lease is held: a relay is working on it. Nothing changed. */
  | "leased"
  /** The record is gone (expired or consumed): a queue orphan for phase 3. Nothing changed. */
  | "gone"
  /** The entry was not in the processing list (another replica reaped it first). Nothing changed. */
  | "absent"
  /** The job had already ended: its stale entry was removed, nothing else changed. */
  | "finished"
  /** Back in the queue as pending. */
  | "requeued"
  /** Failed, and its id is in the dead-letter list. */
  | "deadletter";

/**
 * Phase 0, the processing-queue reaper: reclaims one processing entry whose lease lapsed.
 * KEYS[1] processing list, KEYS[2] queue, KEYS[3] dead-letter list, KEYS[4] record,
 * KEYS[5] lease, KEYS[6] tombstone, KEYS[7] notification outbox, KEYS[8] consumer index (optional).
 * ARGV[1] id, ARGV[2] max reap attempts, ARGV[3] requeue end ("head" or "tail"),
 * ARGV[4] pending record TTL ms, ARGV[5] pending tombstone TTL ms, ARGV[6] failed record
 * TTL ms, ARGV[7] failed tombstone TTL ms, ARGV[8] now (ISO 8601), ARGV[9] error text,
 * ARGV[10] outbox score (sweep-after ms).
 *
 * A pending or processing record counts the reap in its `reap_attempts` field; while the
 * count is <= max it goes back to the queue as pending, else it becomes failed with the
 * error, its id goes to the dead-letter list (and to the outbox when it has a
 * callback_url). The record (and tombstone) TTL follows the new status, as on every
 * status change.
 * Reply: [outcome (ReapOutcome), reap_attempts after the call (0 when not counted)].
 */
export const gcReap: AtomicOp<[string, number]> = {
  name: "gcReap",
  lua: `${LUA_EXTEND_INDEX}${LUA_SCHEDULE_IF_FIELD}
if redis.call('EXISTS', KEYS[5]) == 1 then return {'leased', 0} end
local status = redis.call('HGET', KEYS[4], 'status')
if not status then return {'gone', 0} end
if redis.call('LREM', KEYS[1], 0, ARGV[1]) == 0 then return {'absent', 0} end
if status ~= 'pending' and status ~= 'processing' then return {'finished', 0} end
local attempts = redis.call('HINCRBY', KEYS[4], 'reap_attempts', 1)
if attempts <= tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[4], 'status', 'pending', 'updated_at', ARGV[8])
  redis.call('PEXPIRE', KEYS[4], ARGV[4])
  redis.call('PEXPIRE', KEYS[6], ARGV[5])
  extend_index(KEYS[8], ARGV[4])
  if ARGV[3] == 'head' then
    redis.call('LPUSH', KEYS[2], ARGV[1])
  else
    redis.call('RPUSH', KEYS[2], ARGV[1])
  end
  return {'requeued', attempts}
end
redis.call('HSET', KEYS[4], 'status', 'failed', 'error', ARGV[9], 'updated_at', ARGV[8], 'completed_at', ARGV[8])
redis.call('PEXPIRE', KEYS[4], ARGV[6])
redis.call('PEXPIRE', KEYS[6], ARGV[7])
extend_index(KEYS[8], ARGV[6])
redis.call('RPUSH', KEYS[3], ARGV[1])
schedule_if_field(KEYS[4], 'callback_url', KEYS[7], ARGV[10], ARGV[1])
return {'deadletter', attempts}
`,
  js: (data, [processing, queue, deadletter, record, lease, tombstone, outbox, index], args) => {
    const [id, max, end, pendingTtl, pendingTombTtl, failedTtl, failedTombTtl, now, error, notifyAfter] = args;
    if (data.exists(lease)) return ["leased", 0];
    const status = data.hget(record, "status");
    if (status === null) return ["gone", 0];
    if (data.lrem(processing, 0, id) === 0) return ["absent", 0];
    if (status !== "pending" && status !== "processing") return ["finished", 0];
    const attempts = data.hincrBy(record, "reap_attempts", 1);
    if (attempts <= Number(max)) {
      data.hset(record, { status: "pending", updated_at: now });
      data.pexpire(record, Number(pendingTtl));
      data.pexpire(tombstone, Number(pendingTombTtl));
      extendIndex(data, index, Number(pendingTtl));
      if (end === "head") data.lpush(queue, id);
      else data.rpush(queue, id);
      return ["requeued", attempts];
    }
    data.hset(record, { status: "failed", error, updated_at: now, completed_at: now });
    data.pexpire(record, Number(failedTtl));
    data.pexpire(tombstone, Number(failedTombTtl));
    extendIndex(data, index, Number(failedTtl));
    data.rpush(deadletter, id);
    scheduleIfField(data, record, "callback_url", outbox, Number(notifyAfter), id);
    return ["deadletter", attempts];
  },
};

/**
 * Phase 1, the stale-pending sweep: fails one pending job and takes it out of its queue.
 * It acts only when the record is pending and the LREM removed the entry, so a relay
 * claiming the job at the same moment (its claim is an atomic move out of the queue) and
 * the sweep never both win.
 * KEYS[1] queue, KEYS[2] record, KEYS[3] tombstone, KEYS[4] notification outbox, KEYS[5]
 * consumer index (optional).
 * ARGV[1] id, ARGV[2] failed record TTL ms, ARGV[3] failed tombstone TTL ms, ARGV[4] now
 * (ISO 8601), ARGV[5] error text, ARGV[6] outbox score (sweep-after ms).
 * A failed job with a callback_url joins the outbox.
 * Reply: 1 when the job is now failed; 0 when nothing changed (not pending, or no longer queued).
 */
export const gcFailStalePending: AtomicOp<number> = {
  name: "gcFailStalePending",
  lua: `${LUA_EXTEND_INDEX}${LUA_SCHEDULE_IF_FIELD}
if redis.call('HGET', KEYS[2], 'status') ~= 'pending' then return 0 end
if redis.call('LREM', KEYS[1], 0, ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], 'status', 'failed', 'error', ARGV[5], 'updated_at', ARGV[4], 'completed_at', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
extend_index(KEYS[5], ARGV[2])
schedule_if_field(KEYS[2], 'callback_url', KEYS[4], ARGV[6], ARGV[1])
return 1
`,
  js: (data, [queue, record, tombstone, outbox, index], [id, ttl, tombTtl, now, error, notifyAfter]) => {
    if (data.hget(record, "status") !== "pending") return 0;
    if (data.lrem(queue, 0, id) === 0) return 0;
    data.hset(record, { status: "failed", error, updated_at: now, completed_at: now });
    data.pexpire(record, Number(ttl));
    data.pexpire(tombstone, Number(tombTtl));
    extendIndex(data, index, Number(ttl));
    scheduleIfField(data, record, "callback_url", outbox, Number(notifyAfter), id);
    return 1;
  },
};

/**
 * Phase 3, queue orphan cleanup: removes a queue or processing entry whose record is gone.
 * The record check is repeated inside the op, so an entry is never removed for a job that
 * exists.
 * KEYS[1] the list (queue or processing), KEYS[2] record. ARGV[1] id.
 * Reply: the number of entries removed (0 when the record exists or the entry is gone).
 */
export const gcDropQueueOrphan: AtomicOp<number> = {
  name: "gcDropQueueOrphan",
  lua: `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
return redis.call('LREM', KEYS[1], 0, ARGV[1])
`,
  js: (data, [list, record], [id]) => (data.exists(record) ? 0 : data.lrem(list, 0, id)),
};
