/**
 * The notification outbox end to end in one runtime (async-jobs + webhooks) on both stores
 * (the memory store and the suite's redis-server), with a file object store and the clock
 * driven by hand: a job that ended in the store without `job.terminal` ever firing (its
 * process died) is still notified once, and a normally notified job is never notified again.
 */
import { afterEach, describe, expect, inject, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import type { GatewayServices } from "../../../core/plugins/types.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import asyncJobs from "../../../plugins/async-jobs/index.ts";
import { NOTIFY_GRACE_MS } from "../../../core/jobs/notify-outbox.ts";
import webhooks from "../../../plugins/webhooks/index.ts";
import { RETRIES_KEY } from "../../../plugins/webhooks/queue.ts";
import { startTestRuntime } from "../../support/runtime.ts";

type JobRecord = Parameters<GatewayServices["jobs"]["create"]>[0];

/** A database no other test file uses: the outbox key is global to the store. */
const REDIS_DB = 15;

const stores: { name: string; open: (clock: ManualClock) => Promise<KvStore> }[] = [
  { name: "memory", open: async (clock) => new MemoryKv(clock) },
  {
    name: "redis",
    open: async () => {
      const kv = await RedisKv.connect({ url: inject("redisUrl"), db: REDIS_DB });
      // A clean database per test: entries of an earlier test would be swept here.
      for (let cursor = "0";;) {
        const page = await kv.scan("", cursor, 500);
        if (page.keys.length > 0) await kv.del(...page.keys);
        cursor = page.cursor;
        if (cursor === "0") break;
      }
      return kv;
    },
  },
];

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(open: (clock: ManualClock) => Promise<KvStore>) {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 0, 0));
  const kv = await open(clock);
  const sent: Array<{ url: string; body: Record<string, unknown> }> = [];
  // The built-in order: webhooks sets up before async-jobs.
  const started = await startTestRuntime("", [webhooks, asyncJobs], {
    clock,
    kv,
    objects: "files",
    fetch: () => Promise.reject(new Error("webhooks deliver through fetchPinned")),
    fetchPinned: async (input, _addresses, init = {}) => {
      sent.push({ url: String(input), body: JSON.parse(String(init.body)) as Record<string, unknown> });
      return new Response(null, { status: 200 });
    },
    lookupHost: async (host) => (host === "hooks.example.com" ? ["93.184.216.34"] : []),
  });
  const { runtime, objects, api: probe } = started;
  cleanups.push(async () => {
    await started.close();
    await kv.close();
  });
  const jobs = probe.use("jobs");
  return {
    runtime,
    clock,
    kv,
    objects,
    jobs,
    sent,
    emit: probe.emit,
    outbox: () => kv.zrangeByScore(jobs.keys.notifyOutbox, -Infinity, Infinity),
    sweep: () => runtime.runTaskNow("webhooks.outbox"),
    /** Waits (real time, with a deadline) until `check` holds: deliveries run in the background. */
    async until(check: () => boolean | Promise<boolean>): Promise<void> {
      const deadline = Date.now() + 5000;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error("not settled within 5 s");
        await new Promise((r) => setTimeout(r, 5));
      }
    },
  };
}

type Gateway = Awaited<ReturnType<typeof start>>;

function newJob(overrides: Partial<JobRecord> = {}): JobRecord {
  const now = "2026-01-01T00:00:00.000Z";
  return {
    id: crypto.randomUUID(),
    status: "pending",
    service_type: "transcribe",
    model: "whisper",
    created_at: now,
    updated_at: now,
    priority: false,
    callback_url: "https://hooks.example.com/done",
    operation: "",
    path: "/transcribe",
    input_key: "",
    filename: "a.wav",
    content_type: "audio/wav",
    size: 3,
    ...overrides,
  };
}

/** What a relay does, up to the terminal change in the store; `job.terminal` is not emitted (the process "dies" here). */
async function completeInStore(gw: Gateway, job: JobRecord): Promise<JobRecord> {
  await gw.jobs.create(job);
  const claim = await gw.jobs.claim(job.model, 60_000);
  if (!claim) throw new Error("the job was not queued");
  const resultKey = gw.jobs.keys.resultObject(job.id);
  await gw.objects.put(resultKey, new TextEncoder().encode(`{"text":"hello"}`), { contentType: "application/json" });
  expect(await gw.jobs.finish(claim, job, "completed", { result_key: resultKey })).toEqual({ applied: true, previous: "pending" });
  const finished = await gw.jobs.get(job.id);
  if (!finished) throw new Error("the finished job is gone");
  return finished;
}

describe.each(stores)("webhook outbox: $name", ({ open }) => {
  it("delivers the webhook of a job whose process died before persisting it, once, after the grace period", async () => {
    const gw = await start(open);
    const job = await completeInStore(gw, newJob());
    expect(await gw.outbox()).toEqual([job.id]);
    expect(await gw.kv.zscore(gw.jobs.keys.notifyOutbox, job.id)).toBe(gw.clock.now() + NOTIFY_GRACE_MS);

    // Within the grace period the process that ended the job may still persist it itself.
    gw.clock.advance(NOTIFY_GRACE_MS - 1);
    await gw.sweep();
    expect(await gw.outbox()).toEqual([job.id]);
    expect(gw.sent).toEqual([]);

    gw.clock.advance(1);
    await gw.sweep();
    await gw.until(async () => gw.sent.length === 1 && (await gw.kv.zcard(RETRIES_KEY)) === 0);
    expect(gw.sent[0]).toEqual({
      url: "https://hooks.example.com/done",
      body: {
        job_id: job.id,
        service_type: "transcribe",
        status: "completed",
        result: { text: "hello" },
        error: "",
        completed_at: job.completed_at,
      },
    });
    expect(await gw.outbox()).toEqual([]);

    // Later sweeps and retry polls find nothing more to send.
    gw.clock.advance(10 * 60_000);
    await gw.sweep();
    await gw.runtime.runTaskNow("webhooks.retries");
    await gw.runtime.close();
    expect(gw.sent).toHaveLength(1);
  });

  it("never delivers a normally notified job twice once the grace period passes", async () => {
    const gw = await start(open);
    const job = await completeInStore(gw, newJob());
    // What the relay does next when it does not die.
    gw.emit("job.terminal", { job });
    await gw.until(async () => gw.sent.length === 1 && (await gw.kv.zcard(RETRIES_KEY)) === 0);
    expect(await gw.outbox()).toEqual([]);

    gw.clock.advance(NOTIFY_GRACE_MS + 60_000);
    await gw.sweep();
    await gw.runtime.runTaskNow("webhooks.retries");
    await gw.runtime.close();
    expect(gw.sent).toHaveLength(1);
  });

  it("notifies a pending job cancelled by DELETE whose event was lost", async () => {
    const gw = await start(open);
    const job = newJob();
    await gw.jobs.create(job);
    expect((await gw.jobs.cancel(job))?.status).toBe("cancelled");
    expect(await gw.outbox()).toEqual([job.id]);

    gw.clock.advance(NOTIFY_GRACE_MS);
    await gw.sweep();
    await gw.until(() => gw.sent.length === 1);
    expect(gw.sent[0].body).toMatchObject({ job_id: job.id, status: "cancelled", result: null });
  });

  it("drops the entry of a job gone before the sweep, and never lists a job without a callback_url", async () => {
    const gw = await start(open);
    const silent = await completeInStore(gw, newJob({ callback_url: undefined }));
    const consumed = await completeInStore(gw, newJob());
    expect(await gw.outbox()).toEqual([consumed.id]);
    expect(silent.status).toBe("completed");
    // Read once with persists_result=false: the record is deleted.
    expect(await gw.jobs.consume(consumed)).toBe(true);

    gw.clock.advance(NOTIFY_GRACE_MS);
    await gw.sweep();
    expect(await gw.outbox()).toEqual([]);
    await gw.runtime.close();
    expect(gw.sent).toEqual([]);
  });
});
