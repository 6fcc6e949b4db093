/**
 * The batch engine's atomic operations, each a Lua script for Redis beside its JS twin for the
 * memory store (core/stores/atomic-ops.ts says how the twins stay in step). Every key is a
 * "batch:" key, one hash slot on a Redis Cluster; a claim builds its batch's record and done
 * keys from prefixes passed in ARGV (`keyArgs`), which the cluster adapter tags the same way.
 *
 * A queue entry is "<batch id>:<line>:<attempts made>"; a running line is that entry plus
 * "|<token>" in its model's running set, scored by its lease deadline.
 */
import type { AtomicOp, KvData } from "../../../core/stores/kv.ts";

/** The batch id of a queue entry. */
function batchOf(entry: string): string {
  return entry.slice(0, entry.indexOf(":"));
}

/** The line of a queue entry. */
function lineOf(entry: string): string {
  const first = entry.indexOf(":");
  return entry.slice(first + 1, entry.indexOf(":", first + 1));
}

const LUA_ENTRY = `
local function batch_of(entry) return string.match(entry, '^([^:]+):') end
local function line_of(entry) return string.match(entry, '^[^:]+:([^:]+):') end
`;

/**
 * Creates a batch: its record, its owner's and the operator's index entries and its place on
 * the sweep's schedule; with an Idempotency-Key, only when the key is free (else nothing changes).
 * KEYS[1] record, KEYS[2] owner index, KEYS[3] all batches, KEYS[4] active schedule, KEYS[5] (optional) idempotency key.
 * ARGV[1] id, ARGV[2] index score, ARGV[3] due on the schedule (ms), ARGV[4] idempotency TTL ms, ARGV[5..] field, value pairs.
 * Reply: ["created", id], or ["exists", the id the key already names].
 */
export const batchCreate: AtomicOp<string[]> = {
  name: "batchCreate",
  lua: `
if KEYS[5] then
  if not redis.call('SET', KEYS[5], ARGV[1], 'NX', 'PX', ARGV[4]) then
    return {'exists', redis.call('GET', KEYS[5])}
  end
end
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
return {'created', ARGV[1]}
`,
  js: (data, [record, owner, all, active, idempotency], [id, score, due, idemTtl, ...pairs]) => {
    if (idempotency !== undefined && !data.setIfAbsent(idempotency, id, Number(idemTtl))) return ["exists", data.get(idempotency) ?? ""];
    const fields: Record<string, string> = {};
    for (let i = 0; i < pairs.length; i += 2) fields[pairs[i]] = pairs[i + 1];
    data.hset(record, fields);
    data.zadd(owner, Number(score), id);
    data.zadd(all, Number(score), id);
    data.zadd(active, Number(due), id);
    return ["created", id];
  },
};

/**
 * Changes a batch's status when it is one of `from`, setting fields with it.
 * KEYS[1] record. ARGV[1] the statuses it may be in, comma-separated, ARGV[2] the new status, ARGV[3..] field, value pairs.
 * Reply: the status found before ("" when the record is gone); changed only when it was one of `from`.
 */
export const batchTransition: AtomicOp<string> = {
  name: "batchTransition",
  lua: `
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return '' end
for allowed in string.gmatch(ARGV[1], '[^,]+') do
  if allowed == status then
    redis.call('HSET', KEYS[1], 'status', ARGV[2])
    for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
    return status
  end
end
return status
`,
  js: (data, [record], [from, to, ...pairs]) => {
    const status = data.hget(record, "status");
    if (status === null) return "";
    if (!from.split(",").includes(status)) return status;
    const fields: Record<string, string> = { status: to };
    for (let i = 0; i < pairs.length; i += 2) fields[pairs[i]] = pairs[i + 1];
    data.hset(record, fields);
    return status;
  },
};

/**
 * Puts the next slice of a validated batch's lines in their models' queues, once: only while
 * the batch runs and `enqueued` is where this slice starts (queueing resumed after a crash
 * skips what was queued). The batch is set running first, so a claim never drops a line of it.
 * KEYS[1] record, KEYS[2..] the queues the slice's lines go to.
 * ARGV[1] batch id, ARGV[2] first line of the slice, ARGV[3..] per line, the index in KEYS of its queue.
 * Reply: 1 when queued, 0 when the slice was queued already or the batch is no longer running.
 */
export const linesEnqueue: AtomicOp<number> = {
  name: "batchLinesEnqueue",
  lua: `
if redis.call('HGET', KEYS[1], 'status') ~= 'in_progress' then return 0 end
local from = tonumber(ARGV[2])
if tonumber(redis.call('HGET', KEYS[1], 'enqueued') or '0') ~= from then return 0 end
for i = 3, #ARGV do
  redis.call('RPUSH', KEYS[tonumber(ARGV[i])], ARGV[1] .. ':' .. (from + i - 3) .. ':0')
end
redis.call('HSET', KEYS[1], 'enqueued', from + #ARGV - 2)
return 1
`,
  js: (data, keys, [id, fromText, ...queues]) => {
    const record = keys[0];
    if (data.hget(record, "status") !== "in_progress") return 0;
    const from = Number(fromText);
    if (Number(data.hget(record, "enqueued") ?? "0") !== from) return 0;
    queues.forEach((index, i) => data.rpush(keys[Number(index) - 1], `${id}:${from + i}:0`));
    data.hset(record, { enqueued: String(from + queues.length) });
    return 1;
  },
};

/**
 * Takes the next line of a model to run, while fewer than `limit` of its lines run (across the
 * deployment). Retries that are due go to the head of the queue first. A line of a batch that
 * is no longer running, past its expiry, or already ended (a run a lapsed lease left behind) is
 * dropped on the way.
 * KEYS[1] queue, KEYS[2] running set, KEYS[3] retry schedule.
 * ARGV[1] record key prefix, ARGV[2] done key prefix, ARGV[3] now (ms), ARGV[4] lease deadline (ms),
 * ARGV[5] token, ARGV[6] limit, ARGV[7] most retries moved per call.
 * Reply: ["line", entry] (now running as entry|token), ["busy"] at the limit, ["empty"] when
 * nothing is waiting, ["more"] when only dropped entries were seen (call again).
 */
export const lineClaim: AtomicOp<string[]> = {
  name: "batchLineClaim",
  keyArgs: [0, 1],
  lua: `${LUA_ENTRY}
local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[3], 'LIMIT', 0, ARGV[7])
for i = #due, 1, -1 do
  redis.call('ZREM', KEYS[3], due[i])
  redis.call('LPUSH', KEYS[1], due[i])
end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return {'busy'} end
for _ = 1, 100 do
  local entry = redis.call('LPOP', KEYS[1])
  if not entry then return {'empty'} end
  local id = batch_of(entry)
  local record = ARGV[1] .. id
  local status = redis.call('HGET', record, 'status')
  local expires = tonumber(redis.call('HGET', record, 'expires_ms') or '0')
  if status == 'in_progress' and expires > tonumber(ARGV[3]) and redis.call('HEXISTS', ARGV[2] .. id, line_of(entry)) == 0 then
    redis.call('ZADD', KEYS[2], ARGV[4], entry .. '|' .. ARGV[5])
    redis.call('HINCRBY', record, 'in_flight', 1)
    return {'line', entry}
  end
end
return {'more'}
`,
  js: (data, [queue, running, retry], [recordPrefix, donePrefix, nowText, deadline, token, limit, maxDue]) => {
    const now = Number(nowText);
    const due = data.zrangeByScore(retry, -Infinity, now, Number(maxDue));
    for (let i = due.length - 1; i >= 0; i--) {
      data.zrem(retry, due[i]);
      data.lpush(queue, due[i]);
    }
    if (data.zcard(running) >= Number(limit)) return ["busy"];
    for (let i = 0; i < 100; i++) {
      const entry = data.lpop(queue);
      if (entry === null) return ["empty"];
      const id = batchOf(entry);
      const record = recordPrefix + id;
      const status = data.hget(record, "status");
      const expires = Number(data.hget(record, "expires_ms") ?? "0");
      if (status === "in_progress" && expires > now && data.hget(donePrefix + id, lineOf(entry)) === null) {
        data.zadd(running, Number(deadline), `${entry}|${token}`);
        data.hincrBy(record, "in_flight", 1);
        return ["line", entry];
      }
    }
    return ["more"];
  },
};

/** The JS side of the finish step shared by `lineFinish`: the running entry leaves, `in_flight` follows. */
function leaveRunning(data: KvData, running: string, record: string, member: string): boolean {
  if (data.zrem(running, member) === 0) return false;
  if (data.hget(record, "status") !== null) data.hincrBy(record, "in_flight", -1);
  return true;
}

/**
 * Ends a line: its output line is kept until written to a segment, its batch's count moves,
 * and it leaves the running set. Refused when the line already ended (another run of it, after
 * a lapsed lease) or when its batch is no longer running or cancelling (being finalized).
 * KEYS[1] running set, KEYS[2] record, KEYS[3] done hash, KEYS[4] pending output hash.
 * ARGV[1] running member, ARGV[2] line, ARGV[3] "s" (succeeded) or "f" (failed), ARGV[4] output line (its file's letter first).
 * Reply: [1 when counted else 0, pending output lines, lines not ended, lines in flight, status].
 */
export const lineFinish: AtomicOp<(string | number)[]> = {
  name: "batchLineFinish",
  lua: `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], 'in_flight', -1)
end
local status = redis.call('HGET', KEYS[2], 'status') or ''
local counted = 0
if (status == 'in_progress' or status == 'cancelling') and redis.call('HSETNX', KEYS[3], ARGV[2], ARGV[3]) == 1 then
  redis.call('HSET', KEYS[4], ARGV[2], ARGV[4])
  redis.call('HINCRBY', KEYS[2], ARGV[3] == 's' and 'completed' or 'failed', 1)
  redis.call('HINCRBY', KEYS[2], 'pending', 1)
  counted = 1
end
local function n(field) return tonumber(redis.call('HGET', KEYS[2], field) or '0') end
return {counted, n('pending'), n('total') - n('completed') - n('failed'), n('in_flight'), status}
`,
  js: (data, [running, record, done, output], [member, line, outcome, json]) => {
    leaveRunning(data, running, record, member);
    const status = data.hget(record, "status") ?? "";
    let counted = 0;
    if ((status === "in_progress" || status === "cancelling") && data.hget(done, line) === null) {
      data.hset(done, { [line]: outcome });
      data.hset(output, { [line]: json });
      data.hincrBy(record, outcome === "s" ? "completed" : "failed", 1);
      data.hincrBy(record, "pending", 1);
      counted = 1;
    }
    const n = (field: string) => Number(data.hget(record, field) ?? "0");
    return [counted, n("pending"), n("total") - n("completed") - n("failed"), n("in_flight"), status];
  },
};

/**
 * Puts a running line back, to run again at `due` (a retry, or a line that yielded its turn):
 * it leaves the running set for the retry schedule.
 * KEYS[1] running set, KEYS[2] retry schedule, KEYS[3] record.
 * ARGV[1] running member, ARGV[2] the entry to run again, ARGV[3] due (ms).
 * Reply: 1, or 0 when the lease had lapsed (the sweep requeued the line already).
 */
export const lineRetry: AtomicOp<number> = {
  name: "batchLineRetry",
  lua: `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('HINCRBY', KEYS[3], 'in_flight', -1) end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1
`,
  js: (data, [running, retry, record], [member, entry, due]) => {
    if (!leaveRunning(data, running, record, member)) return 0;
    data.zadd(retry, Number(due), entry);
    return 1;
  },
};

/**
 * Renews the leases of running lines that still hold them.
 * KEYS[1] running set. ARGV[1] new deadline (ms), ARGV[2..] running members.
 * Reply: how many were renewed (a lapsed one was requeued by the sweep and is not renewed).
 */
export const leaseRenew: AtomicOp<number> = {
  name: "batchLeaseRenew",
  lua: `
local renewed = 0
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], ARGV[1], ARGV[i])
    renewed = renewed + 1
  end
end
return renewed
`,
  js: (data, [running], [deadline, ...members]) => {
    let renewed = 0;
    for (const member of members) {
      if (data.zscore(running, member) === null) continue;
      data.zadd(running, Number(deadline), member);
      renewed++;
    }
    return renewed;
  },
};

/**
 * Requeues the lines whose lease lapsed (their process died or stalled), at the head of their
 * queue; a line of a batch that is no longer running is dropped (its batch counts it).
 * KEYS[1] running set, KEYS[2] queue. ARGV[1] record key prefix, ARGV[2] now (ms), ARGV[3] most per call.
 * Reply: how many were taken off the running set.
 */
export const leaseReap: AtomicOp<number> = {
  name: "batchLeaseReap",
  keyArgs: [0],
  lua: `${LUA_ENTRY}
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, ARGV[3])
for i = #lapsed, 1, -1 do
  local member = lapsed[i]
  redis.call('ZREM', KEYS[1], member)
  local entry = string.match(member, '^([^|]+)')
  local record = ARGV[1] .. batch_of(entry)
  if redis.call('EXISTS', record) == 1 then
    redis.call('HINCRBY', record, 'in_flight', -1)
    if redis.call('HGET', record, 'status') == 'in_progress' then redis.call('LPUSH', KEYS[2], entry) end
  end
end
return #lapsed
`,
  js: (data, [running, queue], [recordPrefix, now, max]) => {
    const lapsed = data.zrangeByScore(running, -Infinity, Number(now), Number(max));
    for (let i = lapsed.length - 1; i >= 0; i--) {
      const member = lapsed[i];
      data.zrem(running, member);
      const entry = member.slice(0, member.indexOf("|"));
      const record = recordPrefix + batchOf(entry);
      if (data.hget(record, "status") === null) continue;
      data.hincrBy(record, "in_flight", -1);
      if (data.hget(record, "status") === "in_progress") data.lpush(queue, entry);
    }
    return lapsed.length;
  },
};

/**
 * Records segments written from pending output lines, and drops those lines from the pending
 * hash, only if every one of them is still pending (another flush may have written some).
 * KEYS[1] pending output hash, KEYS[2] segment list, KEYS[3] record.
 * ARGV[1] how many segments follow, ARGV[2..] the segments, then the lines they hold.
 * Reply: 1 when recorded, 0 when some line was written by another flush (nothing changed).
 */
export const segmentCommit: AtomicOp<number> = {
  name: "batchSegmentCommit",
  lua: `
local count = tonumber(ARGV[1])
for i = count + 2, #ARGV do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then return 0 end
end
for i = count + 2, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
for i = 2, count + 1 do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('HINCRBY', KEYS[3], 'pending', -(#ARGV - count - 1))
return 1
`,
  js: (data, [output, segments, record], [countText, ...rest]) => {
    const count = Number(countText);
    const lines = rest.slice(count);
    if (lines.some((line) => data.hget(output, line) === null)) return 0;
    for (const line of lines) data.hdel(output, line);
    for (const segment of rest.slice(0, count)) data.rpush(segments, segment);
    data.hincrBy(record, "pending", -lines.length);
    return 1;
  },
};

/**
 * Ends a batch: its final status and fields when it is in one of `from`, it leaves the sweep's
 * schedule, and its record and what it kept while running expire after the retention. A batch
 * with a callback URL joins the notification outbox in the same step, so a process that dies
 * before its webhook is handed over leaves it to the outbox sweep.
 * KEYS[1] record, KEYS[2] active schedule, KEYS[3] notification outbox, KEYS[4..] the batch's keys kept while running (deleted).
 * ARGV[1] allowed statuses, comma-separated, ARGV[2] final status, ARGV[3] retention ms, ARGV[4] id, ARGV[5] now (ms), ARGV[6..] field, value pairs.
 * Reply: 1 when ended now, 0 otherwise.
 */
export const batchEnd: AtomicOp<number> = {
  name: "batchEnd",
  lua: `
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
local allowed = false
for s in string.gmatch(ARGV[1], '[^,]+') do if s == status then allowed = true end end
if not allowed then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2])
for i = 6, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[4])
local callback = redis.call('HGET', KEYS[1], 'callback_url')
if callback and callback ~= '' then redis.call('ZADD', KEYS[3], ARGV[5], ARGV[4]) end
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
`,
  js: (data, [record, active, outbox, ...kept], [from, to, retentionMs, id, now, ...pairs]) => {
    const status = data.hget(record, "status");
    if (status === null || !from.split(",").includes(status)) return 0;
    const fields: Record<string, string> = { status: to };
    for (let i = 0; i < pairs.length; i += 2) fields[pairs[i]] = pairs[i + 1];
    data.hset(record, fields);
    data.pexpire(record, Number(retentionMs));
    data.zrem(active, id);
    const callback = data.hget(record, "callback_url");
    if (callback !== null && callback !== "") data.zadd(outbox, Number(now), id);
    for (const key of kept) data.del(key);
    return 1;
  },
};

/**
 * Takes the batches due on the sweep's schedule: each stays on it, due again at `leaseUntil`,
 * so a sweep that dies while working on one leaves it to the next.
 * KEYS[1] schedule. ARGV[1] now (ms), ARGV[2] lease deadline (ms), ARGV[3] most per call.
 * Reply: the batch ids taken.
 */
export const scheduleTake: AtomicOp<string[]> = {
  name: "batchScheduleTake",
  lua: `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, id in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[2], id) end
return due
`,
  js: (data, [schedule], [now, deadline, max]) => {
    const due = data.zrangeByScore(schedule, -Infinity, Number(now), Number(max));
    for (const id of due) data.zadd(schedule, Number(deadline), id);
    return due;
  },
};

/**
 * Sets when the sweep looks at a batch next, if it is still on the schedule (an ended batch is
 * not put back). With "earlier", only a sooner time than the one set is taken: a wake-up set
 * meanwhile (a batch's last line ended) is never pushed back by a later plan.
 * KEYS[1] schedule. ARGV[1] due (ms), ARGV[2] id, ARGV[3] "earlier" or "any".
 * Reply: 1 when set, 0 otherwise.
 */
export const scheduleSet: AtomicOp<number> = {
  name: "batchScheduleSet",
  lua: `
local current = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not current then return 0 end
if ARGV[3] == 'earlier' and tonumber(current) <= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
return 1
`,
  js: (data, [schedule], [due, id, mode]) => {
    const current = data.zscore(schedule, id);
    if (current === null) return 0;
    if (mode === "earlier" && current <= Number(due)) return 0;
    data.zadd(schedule, Number(due), id);
    return 1;
  },
};
