/**
 * services[].retry in-process, on the memory store and on the suite's redis-server: the
 * relay driven by the test, time by a manual clock (no sleeping), the backend a scripted
 * fake. What a client sees (status, attempts, error), what the metrics say and what is
 * left in the store.
 */
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { type ScriptedBackend, startScriptedBackend } from "../../fixtures/scripted-backend.ts";
import { jobForm, type JobsRuntime, jobsRuntime } from "../async-jobs/harness.ts";

let backend: ScriptedBackend;
beforeAll(async () => {
  backend = await startScriptedBackend();
});
afterAll(async () => {
  await backend.close();
});

interface JobView {
  id: string;
  status: string;
  attempts: number;
  result?: unknown;
  error?: string;
}

const stores: Array<{ name: string; open: () => Promise<KvStore | undefined> }> = [
  { name: "memory", open: async () => undefined },
  { name: "redis", open: async () => await RedisKv.connect({ url: inject("redisUrl") }) },
];

describe.each(stores)("job retries: $name", ({ open }) => {
  let gw: JobsRuntime;
  let kv: KvStore | undefined;
  let clock: ManualClock;
  /** Model names of their own per test: the Redis database is shared. */
  let model: string;

  async function start(extra = ""): Promise<void> {
    clock = new ManualClock();
    kv = await open();
    model = `m-${crypto.randomUUID().slice(0, 8)}`;
    gw = await jobsRuntime(
      `${extra}
services:
  - type: asr
    model: ${model}
    inference_url: ${backend.url}
    operations: { run: ["/run"] }
    retry: { max_attempts: 3, backoff: 1s, max_backoff: 10s }
  - type: asr
    model: ${model}-once
    inference_url: ${backend.url}
    operations: { run: ["/run"] }
`,
      { clock, kv },
    );
  }

  afterEach(async () => {
    await gw.close();
    await kv?.close();
  });

  async function submit(which = model): Promise<string> {
    const response = await gw.request("/jobs/asr", { method: "POST", body: jobForm({ model: which }, { name: "a.wav", content: "audio" }) });
    expect(response.status).toBe(202);
    return ((await response.json()) as { job_id: string }).job_id;
  }

  async function view(id: string): Promise<JobView> {
    const response = await gw.request(`/jobs/asr/${id}`);
    expect(response.status).toBe(200);
    return (await response.json()) as JobView;
  }

  /** Moves the clock on and gives the relay one round. */
  async function after(ms: number): Promise<void> {
    clock.advance(ms);
    await gw.relay();
  }

  it("retries a 503 and then a dropped connection after the backoff, doubled; the job completes with attempts 3", async () => {
    await start();
    backend.script([{ status: 503 }, "drop"]);
    const id = await submit();
    expect((await view(id)).attempts).toBe(0);

    await gw.relay();
    expect(backend.calls).toBe(1);
    expect(await view(id)).toMatchObject({ status: "pending", attempts: 1 });
    expect((await view(id)).error).toBeUndefined();
    // Waiting for its retry: in no processing list and without a lease, so the GC reaper never takes it for lost.
    expect(await gw.kv.llen(`relay:${model}:processing`)).toBe(0);
    expect(await gw.kv.exists(`relay-lease:${id}`)).toBe(false);
    expect(await gw.kv.zscore(`relay-retry:${model}`, id)).toBe(clock.now() + 1_000);

    await after(999);
    expect(backend.calls).toBe(1);
    await after(1);
    expect(backend.calls).toBe(2);
    expect(await view(id)).toMatchObject({ status: "pending", attempts: 2 });

    // The second retry waits twice as long.
    await after(1_999);
    expect(backend.calls).toBe(2);
    await after(1);
    expect(backend.calls).toBe(3);
    expect(await view(id)).toMatchObject({ status: "completed", attempts: 3, result: { ok: true, call: 3 } });

    const metrics = await gw.metrics.text();
    expect(metrics).toContain(`svc_relay_job_retries_total{model="${model}",reason="503"} 1`);
    expect(metrics).toContain(`svc_relay_job_retries_total{model="${model}",reason="network"} 1`);
    expect(metrics).toContain(`svc_relay_jobs_total{model="${model}",outcome="retried"} 2`);
    expect(metrics).toContain(`svc_relay_jobs_total{model="${model}",outcome="completed"} 1`);
    // Every attempt's inference time counts against the processing-time budget.
    expect(gw.events.filter((e) => e.name === "relay.processed")).toHaveLength(3);
    expect(await gw.kv.zcard(`relay-retry:${model}`)).toBe(0);
  });

  it("waits for a backend's Retry-After when it is longer than the backoff, capped by max_backoff", async () => {
    await start();
    backend.script([{ status: 429, headers: { "retry-after": "5" } }, { status: 429, headers: { "retry-after": "3600" } }]);
    const id = await submit();
    await gw.relay();
    await after(4_999);
    expect(backend.calls).toBe(1);
    await after(1);
    expect(backend.calls).toBe(2);
    // An hour asked for; max_backoff is 10s.
    await after(9_999);
    expect(backend.calls).toBe(2);
    await after(1);
    expect(await view(id)).toMatchObject({ status: "completed", attempts: 3 });
  });

  it("retries an attempt that passed relay.request_timeout", async () => {
    await start("relay: { request_timeout: 500ms }");
    backend.script(["hang"]);
    const id = await submit();
    await gw.relay();
    expect(await view(id)).toMatchObject({ status: "pending", attempts: 1 });
    await after(1_000);
    expect(await view(id)).toMatchObject({ status: "completed", attempts: 2, result: { ok: true, call: 2 } });
    expect(await gw.metrics.text()).toContain(`svc_relay_job_retries_total{model="${model}",reason="timeout"} 1`);
  });

  it("fails the job once max_attempts is used up, with the last error", async () => {
    await start();
    backend.script([{ status: 503 }, { status: 502 }, { status: 504, body: "gateway timeout" }]);
    const id = await submit();
    await gw.relay();
    await after(1_000);
    await after(2_000);
    expect(backend.calls).toBe(3);
    const failed = await view(id);
    expect(failed).toMatchObject({ status: "failed", attempts: 3 });
    expect(failed.error).toBe("the backend answered HTTP 504: gateway timeout (gave up after 3 attempts, services[].retry.max_attempts)");
    await after(60_000);
    expect(backend.calls).toBe(3);
  });

  it("does not retry a status that is not in on_statuses (400)", async () => {
    await start();
    backend.script([{ status: 400, body: "bad audio" }]);
    const id = await submit();
    await gw.relay();
    await after(60_000);
    expect(backend.calls).toBe(1);
    expect(await view(id)).toMatchObject({ status: "failed", attempts: 1, error: "the backend answered HTTP 400: bad audio" });
    expect(await gw.metrics.text()).not.toContain("svc_relay_job_retries_total{");
  });

  it("without a retry policy, a 503 fails the job after one attempt (the spec's behaviour)", async () => {
    await start();
    backend.script([{ status: 503, body: "busy" }]);
    const id = await submit(`${model}-once`);
    await gw.relay();
    await after(60_000);
    expect(backend.calls).toBe(1);
    expect(await view(id)).toMatchObject({ status: "failed", attempts: 1, error: "the backend answered HTTP 503: busy" });
  });

  it("a DELETE during the backoff cancels the job for good: it never runs again", async () => {
    await start();
    backend.script([{ status: 503 }]);
    const id = await submit();
    await gw.relay();
    expect(await view(id)).toMatchObject({ status: "pending", attempts: 1 });

    const cancel = await gw.request(`/jobs/asr/${id}`, { method: "DELETE" });
    expect(cancel.status).toBe(202);
    expect(await cancel.json()).toEqual({ job_id: id, status: "cancelled" });
    expect(await gw.kv.zcard(`relay-retry:${model}`)).toBe(0);

    await after(60_000);
    expect(backend.calls).toBe(1);
    expect(await view(id)).toMatchObject({ status: "cancelled", attempts: 1 });
    expect(await gw.kv.llen(`relay:${model}`)).toBe(0);
    // Its input is not needed any more.
    expect(await gw.objects.get(`jobs/${id}/input`)).toBeNull();
  });
});
