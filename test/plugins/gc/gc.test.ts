/**
 * The GC plugin in-process (memory KV on a manual clock, file objects, the fake inference
 * backend): each phase's effect, what it must leave alone, the abort rule of phases 2 and
 * 3, and bounded reads. A relay that "died" is simulated by claiming a job through the job
 * store and letting the lease lapse on the clock.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { ObjectInfo } from "../../../core/stores/objects.ts";
import { modelOfQueueKey } from "../../../core/jobs/queue-models.ts";
import { type InferenceBackend, startInferenceBackend } from "../../fixtures/inference-backend.ts";
import { type GcHarnessOptions, type GcRuntime, gcRuntime, readObject } from "./harness.ts";

let backend: InferenceBackend;
beforeAll(async () => {
  backend = await startInferenceBackend();
});
afterAll(async () => {
  await backend.close();
});

const open: GcRuntime[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
});

const LEASE_MS = 1_000;

function yaml(extra: { gc?: string; redis?: string; ttl?: string } = {}): string {
  return `
redis:
  pending_max_age: "${extra.redis ?? ""}"
relay:
  lease_seconds: 1
lifecycle:
  persists_result: true
  job_ttl: { ${extra.ttl ?? "pending: 24h"} }
  gc: { ${extra.gc ?? "enabled: true"} }
services:
  - type: asr
    model: whisper
    inference_url: ${backend.url}
    operations: { run: ["/run"] }
  - type: ocr
    inference_url: ${backend.url}
    operations: { run: ["/run"] }
`;
}

async function start(text: string, options: GcHarnessOptions = {}): Promise<GcRuntime> {
  const h = await gcRuntime(text, options);
  open.push(h);
  return h;
}

/** A relay claims the next job of the model, starts it and dies: its lease lapses after LEASE_MS. */
async function claimAndDie(h: GcRuntime, model: string): Promise<string> {
  const claim = await h.jobs.claim(model, LEASE_MS);
  if (!claim) throw new Error(`nothing to claim in ${model}`);
  const job = await h.jobs.get(claim.id);
  if (!job) throw new Error(`job ${claim.id} is gone`);
  await h.jobs.transition(job, ["pending"], "processing");
  return claim.id;
}

const list = (h: GcRuntime, key: string) => h.kv.lrange(key, 0, -1);

describe("plugin switch", () => {
  it("is off unless gc.enabled or redis.pending_max_age is set", async () => {
    const h = await start(yaml({ gc: "enabled: false" }));
    expect(h.runtime.activePlugins).not.toContain("gc");
    await expect(h.gc()).rejects.toThrow(/no background task "gc"/);
  });

  it("runs only the stale-pending sweep when just redis.pending_max_age is set", async () => {
    const h = await start(yaml({ gc: "enabled: false", redis: "30m" }));
    expect(h.runtime.activePlugins).toContain("gc");
    await h.submit("asr");
    const id = await claimAndDie(h, "whisper");
    h.clock.advance(LEASE_MS + 1);
    await h.gc();
    // The reaper is phase 0, which needs gc.enabled.
    expect(await list(h, h.jobs.keys.processing("whisper"))).toEqual([id]);
  });
});

describe("phase 0: the reaper", () => {
  it("requeues a job whose lease expired at the queue head, and a relay then completes it", async () => {
    const h = await start(yaml({ gc: "enabled: true, max_reap_attempts: 3" }));
    const crashed = await h.submit("asr", "crashed");
    const alive = await h.submit("asr", "alive");
    const waiting = await h.submit("asr", "waiting");
    expect(await claimAndDie(h, "whisper")).toBe(crashed);
    // A relay still working on its job renews the lease: it must be left alone.
    const held = await h.jobs.claim("whisper", 60 * 60_000);
    expect(held?.id).toBe(alive);
    h.clock.advance(LEASE_MS + 1);

    await h.gc();
    expect(await list(h, h.jobs.keys.queue("whisper"))).toEqual([crashed, waiting]);
    expect(await list(h, h.jobs.keys.processing("whisper"))).toEqual([alive]);
    expect(await h.kv.hget(h.jobs.keys.record(crashed), "reap_attempts")).toBe("1");
    expect((await h.jobs.get(crashed))?.status).toBe("pending");
    expect(await h.metric("svc_async_jobs_reaped_total", { model: "whisper", outcome: "requeued" })).toBe(1);
    // The requeued record lives a pending TTL from now: its concurrent-job slot is told so.
    expect(h.expiry).toEqual([{ job: expect.objectContaining({ id: crashed, status: "pending" }), expiresAt: h.clock.now() + h.jobs.ttlFor("pending") }]);

    // A second tick finds nothing more to do.
    await h.gc();
    expect(await h.metric("svc_async_jobs_reaped_total", { model: "whisper", outcome: "requeued" })).toBe(1);

    await h.relay();
    expect((await h.jobs.get(crashed))?.status).toBe("completed");
    expect(backend.runs.get("crashed")).toBe(1);
  });

  it("fails and dead-letters a job after max_reap_attempts, deletes its input and emits job.terminal", async () => {
    const h = await start(yaml({ gc: "enabled: true, max_reap_attempts: 1" }));
    const id = await h.submit("asr");
    const input = h.jobs.keys.inputObject(id);
    expect(await readObject(h.objects, input)).toBe("input bytes");

    await claimAndDie(h, "whisper");
    h.clock.advance(LEASE_MS + 1);
    await h.gc();
    expect((await h.jobs.get(id))?.status).toBe("pending");

    await claimAndDie(h, "whisper");
    h.clock.advance(LEASE_MS + 1);
    await h.gc();
    const job = await h.jobs.get(id);
    expect(job?.status).toBe("failed");
    expect(job?.error).toMatch(/lease.*max_reap_attempts \(1\).*dead-letter/);
    expect(await h.kv.hget(h.jobs.keys.record(id), "reap_attempts")).toBe("2");
    expect(await list(h, h.jobs.keys.deadletter("whisper"))).toEqual([id]);
    expect(await list(h, h.jobs.keys.queue("whisper"))).toEqual([]);
    expect(await list(h, h.jobs.keys.processing("whisper"))).toEqual([]);
    expect(await readObject(h.objects, input)).toBeNull();
    expect(h.terminal.map((j) => [j.id, j.status, j.error])).toEqual([[id, "failed", job?.error]]);
    expect(await h.metric("svc_async_jobs_reaped_total", { model: "whisper", outcome: "requeued" })).toBe(1);
    expect(await h.metric("svc_async_jobs_reaped_total", { model: "whisper", outcome: "deadletter" })).toBe(1);
  });

  it("queues a service without a model under its type, as async-jobs does", async () => {
    const h = await start(yaml());
    const id = await h.submit("ocr");
    await claimAndDie(h, "ocr");
    h.clock.advance(LEASE_MS + 1);
    await h.gc();
    expect(await list(h, h.jobs.keys.queue("ocr"))).toEqual([id]);
    expect(await h.metric("svc_async_jobs_reaped_total", { model: "ocr", outcome: "requeued" })).toBe(1);
  });

  it("reaps the processing list of a model removed from the config", async () => {
    const h = await start(yaml());
    const id = await h.submit("asr");
    // Stored under a model this config does not name (it was removed before a reload).
    const record = h.jobs.keys.record(id);
    await h.kv.hset(record, { model: "retired" });
    await h.kv.lrem(h.jobs.keys.queue("whisper"), 0, id);
    await h.kv.push(h.jobs.keys.processing("retired"), id, "tail");
    await h.kv.hset(record, { status: "processing" });
    await h.gc();
    expect(await list(h, h.jobs.keys.queue("retired"))).toEqual([id]);
    expect(await h.metric("svc_async_jobs_reaped_total", { model: "retired", outcome: "requeued" })).toBe(1);
  });
});

describe("phase 1: the stale-pending sweep", () => {
  it("fails pending jobs older than pending_max_age, deletes their inputs and dequeues them", async () => {
    const h = await start(yaml({ gc: "enabled: false", redis: "30m" }));
    const old = await h.submit("asr", "old");
    h.clock.advance(31 * 60_000);
    const fresh = await h.submit("asr", "fresh");
    await h.gc();

    const failed = await h.jobs.get(old);
    expect(failed?.status).toBe("failed");
    expect(failed?.error).toContain("redis.pending_max_age (30m)");
    expect(await readObject(h.objects, h.jobs.keys.inputObject(old))).toBeNull();
    expect(await list(h, h.jobs.keys.queue("whisper"))).toEqual([fresh]);
    expect((await h.jobs.get(fresh))?.status).toBe("pending");
    expect(await readObject(h.objects, h.jobs.keys.inputObject(fresh))).toBe("fresh");
    expect(h.terminal.map((j) => [j.id, j.status])).toEqual([[old, "failed"]]);

    // A relay finds only the fresh job.
    await h.relay();
    expect(backend.runs.get("old")).toBeUndefined();
    expect((await h.jobs.get(fresh))?.status).toBe("completed");
  });
});

describe("phase 2: object orphans", () => {
  it("deletes job files whose record is gone once older than orphan_min_age, and nothing else", async () => {
    const h = await start(yaml({ gc: "enabled: true, orphan_min_age: 1h" }));
    const live = await h.submit("asr", "live");
    const strayId = crypto.randomUUID();
    const put = (key: string) => h.objects.put(key, new TextEncoder().encode("stray"));
    const strays = [`jobs/${strayId}/input`, `jobs/${strayId}/result`];
    const foreign = ["jobs/not-a-job/file", `other/${crypto.randomUUID()}/input`];
    for (const key of [...strays, ...foreign]) await put(key);

    await h.gc();
    // Too young: an upload is stored before its record is saved.
    for (const key of strays) expect(await readObject(h.objects, key)).toBe("stray");

    h.clock.advance(2 * 60 * 60_000);
    await h.gc();
    for (const key of strays) expect(await readObject(h.objects, key)).toBeNull();
    for (const key of foreign) expect(await readObject(h.objects, key)).toBe("stray");
    expect(await readObject(h.objects, h.jobs.keys.inputObject(live))).toBe("live");
  });

  it("deletes the files of a job whose record expired", async () => {
    const h = await start(yaml({ gc: "enabled: true, orphan_min_age: 0s", ttl: "pending: 1h" }));
    const id = await h.submit("asr", "expiring");
    h.clock.advance(2 * 60 * 60_000);
    await h.gc();
    expect(await readObject(h.objects, h.jobs.keys.inputObject(id))).toBeNull();
  });
});

describe("phase 3: queue orphans", () => {
  it("removes queue and processing entries whose record is gone, in configured and removed models", async () => {
    const h = await start(yaml());
    const gone = await h.submit("asr", "gone");
    const kept = await h.submit("asr", "kept");
    await h.kv.del(h.jobs.keys.record(gone));
    const strayProcessing = crypto.randomUUID();
    const strayRetired = crypto.randomUUID();
    await h.kv.push(h.jobs.keys.processing("whisper"), strayProcessing, "tail");
    await h.kv.push(h.jobs.keys.queue("retired"), strayRetired, "tail");

    await h.gc();
    expect(await list(h, h.jobs.keys.queue("whisper"))).toEqual([kept]);
    expect(await list(h, h.jobs.keys.processing("whisper"))).toEqual([]);
    expect(await list(h, h.jobs.keys.queue("retired"))).toEqual([]);
    const swept = (model: string, state: string) => h.metric("svc_relay_queue_orphans_swept_total", { model, state });
    expect(await swept("whisper", "pending")).toBe(1);
    expect(await swept("whisper", "processing")).toBe(1);
    expect(await swept("retired", "pending")).toBe(1);
    // The dropped job's input is an orphan file too (orphan_min_age 5m has not passed yet).
    expect(await readObject(h.objects, h.jobs.keys.inputObject(gone))).toBe("gone");
  });
});

/** Wraps a store so chosen calls fail, as a store going away mid-read would. */
function failing<T extends object>(store: T, fails: (method: string, args: unknown[]) => boolean): T {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (fails(String(property), args)) throw new Error(`injected ${String(property)} failure`);
        return value.apply(target, args);
      };
    },
  });
}

describe("phases 2 and 3 never delete on partial information", () => {
  it("phase 2 deletes nothing when the object listing fails part-way", async () => {
    let broken = false;
    const h = await start(yaml({ gc: "enabled: true, orphan_min_age: 0s" }), {
      objects: (files) => ({
        kind: files.kind,
        put: (key, body, options) => files.put(key, body, options),
        get: (key) => files.get(key),
        delete: (key) => files.delete(key),
        ping: () => files.ping(),
        close: () => files.close(),
        async *list(prefix: string): AsyncIterable<ObjectInfo> {
          let seen = 0;
          for await (const info of files.list(prefix)) {
            if (broken && ++seen > 150) throw new Error("injected listing failure");
            yield info;
          }
        },
      }),
    });
    const keys = Array.from({ length: 200 }, () => `jobs/${crypto.randomUUID()}/input`);
    for (const key of keys) await h.objects.put(key, new TextEncoder().encode("x"));
    // Past the files' modification times, so all of them are old enough.
    h.clock.set(Date.now() + 1_000);
    broken = true;
    await h.gc();
    for (const key of keys) expect(await readObject(h.objects, key)).toBe("x");
    broken = false;
    await h.gc();
    for (const key of keys) expect(await readObject(h.objects, key)).toBeNull();
  });

  it("phase 2 deletes nothing when the record checks fail, though the object store works", async () => {
    let broken = false;
    const h = await start(yaml({ gc: "enabled: true, orphan_min_age: 0s" }), {
      kv: (kv) => failing<KvStore>(kv, (method) => broken && method === "exists"),
    });
    const key = `jobs/${crypto.randomUUID()}/input`;
    await h.objects.put(key, new TextEncoder().encode("x"));
    h.clock.set(Date.now() + 1_000);
    broken = true;
    await h.gc();
    expect(await readObject(h.objects, key)).toBe("x");
    broken = false;
    await h.gc();
    expect(await readObject(h.objects, key)).toBeNull();
  });

  it("phase 3 removes nothing when a later list cannot be read", async () => {
    let broken = false;
    const h = await start(yaml(), {
      kv: (kv) => failing<KvStore>(kv, (method, args) => broken && method === "lrange" && String(args[0]).endsWith(":processing")),
    });
    const gone = await h.submit("asr");
    await h.kv.del(h.jobs.keys.record(gone));
    const stray = crypto.randomUUID();
    await h.kv.push(h.jobs.keys.processing("whisper"), stray, "tail");
    broken = true;
    await h.gc();
    broken = false;
    expect(await list(h, h.jobs.keys.queue("whisper"))).toEqual([gone]);
    expect(await list(h, h.jobs.keys.processing("whisper"))).toEqual([stray]);
    expect(await h.metric("svc_relay_queue_orphans_swept_total", { model: "whisper", state: "pending" })).toBe(0);
    await h.gc();
    expect(await list(h, h.jobs.keys.queue("whisper"))).toEqual([]);
    expect(await list(h, h.jobs.keys.processing("whisper"))).toEqual([]);
  });

  it("phase 3 removes nothing when the ping fails", async () => {
    let broken = false;
    const h = await start(yaml(), { kv: (kv) => failing<KvStore>(kv, (method) => broken && method === "ping") });
    const gone = await h.submit("asr");
    await h.kv.del(h.jobs.keys.record(gone));
    broken = true;
    await h.gc();
    expect(await list(h, h.jobs.keys.queue("whisper"))).toEqual([gone]);
  });
});

describe("bounded reads", () => {
  it("reads lists in chunks and keys by SCAN pages", async () => {
    const calls: Array<{ method: string; args: unknown[] }> = [];
    const h = await start(yaml({ gc: "enabled: true, orphan_min_age: 0s", redis: "30m" }), {
      kv: (kv) =>
        failing<KvStore>(kv, (method, args) => {
          calls.push({ method, args });
          return false;
        }),
    });
    for (let i = 0; i < 250; i++) {
      const id = crypto.randomUUID();
      await h.kv.push(h.jobs.keys.queue("whisper"), id, "tail");
      await h.kv.push(h.jobs.keys.processing("whisper"), id, "tail");
    }
    calls.length = 0;
    await h.gc();
    const ranges = calls.filter((c) => c.method === "lrange").map((c) => [Number(c.args[1]), Number(c.args[2])]);
    expect(ranges.length).toBeGreaterThanOrEqual(3 * 4);
    for (const [from, to] of ranges) {
      expect(from).toBeGreaterThanOrEqual(0);
      expect(to - from + 1).toBeLessThanOrEqual(100);
    }
    expect(calls.some((c) => c.method === "scan")).toBe(true);
    // All 500 entries were orphans and are gone.
    expect(await h.kv.llen(h.jobs.keys.queue("whisper"))).toBe(0);
    expect(await h.kv.llen(h.jobs.keys.processing("whisper"))).toBe(0);
  });
});

describe("model discovery", () => {
  it("tells the model of a relay: key, with aliases that contain a colon", async () => {
    const h = await start(yaml());
    const configured = new Set(["llama:8b", "whisper"]);
    const of = (key: string) => modelOfQueueKey(h.jobs, key, configured);
    expect(of(h.jobs.keys.queue("whisper"))).toBe("whisper");
    expect(of(h.jobs.keys.processing("whisper"))).toBe("whisper");
    expect(of(h.jobs.keys.deadletter("whisper"))).toBe("whisper");
    expect(of(h.jobs.keys.queue("llama:8b"))).toBe("llama:8b");
    expect(of(h.jobs.keys.processing("llama:8b"))).toBe("llama:8b");
    expect(of(h.jobs.keys.queue("gone:1b"))).toBe("gone:1b");
    expect(of(h.jobs.keys.lease("x"))).toBeUndefined();
  });
});
