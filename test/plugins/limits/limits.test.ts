/**
 * The limits plugin in-process, where the test controls every step: concurrent-job slots
 * while a submission is still uploading, processing seconds measured on a manual clock,
 * the sync cap's pools and its release when a body ends or the client goes away, and
 * failing open when the store fails. (The real-process behaviour on Redis, two replicas
 * included, is in test/e2e/limits.test.ts.)
 */
import { afterEach, describe, expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { jobForm, type LimitsRuntime, limitsRuntime, sample, until } from "./harness.ts";

const CONFIG = `
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
  priority_header: X-Priority
rate_limits:
  transcription:
    "*": { max_concurrent: 1, processing_time: 60, processing_period: 1h }
  echo:
    "*": { rate: 100, period: 1m }
services:
  - type: transcription
    model: whisper
    inference_url: http://backend
    operations: { transcribe: ["/transcribe"] }
    accepted_exts: [wav]
  - type: echo
    model: echo
    inference_url: http://backend
    operations: { run: ["/v1/echo"] }
    max_concurrent_sync: 2
    priority_reserved_sync: 1
`;

let gw: LimitsRuntime | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

async function start(config = CONFIG, kv?: KvStore): Promise<LimitsRuntime> {
  gw = await limitsRuntime(config, { kv });
  return gw;
}

const submit = (g: LimitsRuntime, consumer: string | undefined, form = jobForm()) =>
  g.request("/jobs/transcription", { method: "POST", body: form, headers: consumer ? { "x-consumer": consumer } : {} });

const slots = async (g: LimitsRuntime, consumer = "alice") => await g.kv.zrangeByScore(`conc:transcription:${consumer}`, -Infinity, Infinity);

/** A multipart upload whose body stays open until `finish()`: a submission still in flight. */
function slowUpload(): { body: ReadableStream<Uint8Array>; contentType: string; finish(): void } {
  const boundary = "slow-upload-boundary";
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      c.enqueue(encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nfirst half`));
    },
  });
  return {
    body,
    contentType: `multipart/form-data; boundary=${boundary}`,
    finish() {
      controller.enqueue(encoder.encode(` second half\r\n--${boundary}--\r\n`));
      controller.close();
    },
  };
}

describe("concurrent async jobs (docs/design.md#concurrent-jobs)", () => {
  it("counts a submission still uploading, then its job until the job ends", async () => {
    const g = await start();
    const upload = slowUpload();
    const first = g.request("/jobs/transcription", {
      method: "POST",
      body: upload.body,
      headers: { "content-type": upload.contentType, "x-consumer": "alice" },
      duplex: "half",
    } as RequestInit);
    await until(async () => (await slots(g)).length === 1, "the in-flight submission's reservation");

    const refused = await submit(g, "alice");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(refused.headers.get("x-concurrent-limit")).toBe("1");
    expect(refused.headers.get("x-concurrent-remaining")).toBe("0");
    expect(await refused.json()).toEqual({
      error: { message: expect.stringContaining("concurrent job limit"), type: "rate_limit_error", code: "concurrent_jobs_exceeded" },
    });

    upload.finish();
    const accepted = await first;
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get("x-concurrent-limit")).toBe("1");
    expect(accepted.headers.get("x-concurrent-remaining")).toBe("0");
    const { job_id } = (await accepted.json()) as { job_id: string };
    // The reservation became the job's slot.
    expect(await slots(g)).toEqual([job_id]);
    expect((await submit(g, "alice")).status).toBe(429);
    // Another consumer has slots of their own; anonymous callers bypass limits.
    expect((await submit(g, "bob")).status).toBe(202);
    expect((await submit(g, undefined)).status).toBe(202);

    // The job ends (cancelled while pending): its slot is free again.
    const cancelled = await g.request(`/jobs/transcription/${job_id}`, { method: "DELETE", headers: { "x-consumer": "alice" } });
    expect(cancelled.status).toBe(202);
    await until(async () => (await slots(g)).length === 0, "the cancelled job's slot to be released");
    const again = await submit(g, "alice");
    expect(again.status).toBe(202);
    expect(again.headers.get("x-concurrent-remaining")).toBe("0");
  });

  it("gives a failed submission's reservation back once its response is finished", async () => {
    const g = await start();
    const rejected = await submit(g, "alice", jobForm("x", "notes.txt"));
    expect(rejected.status).toBe(400);
    await rejected.text();
    await until(async () => (await slots(g)).length === 0, "the failed submission's reservation to be released");
    expect((await submit(g, "alice")).status).toBe(202);
  });

  it("frees a job's slot when the relay finishes it", async () => {
    const g = await start();
    expect((await submit(g, "alice")).status).toBe(202);
    await g.relayRound();
    await until(() => g.backend.waiting.length === 1, "the relay's backend call");
    g.backend.answerAll();
    await g.relayIdle();
    await until(async () => (await slots(g)).length === 0, "the finished job's slot");
  });
});

describe("a job's slot follows its record's life (docs/design.md#concurrent-jobs)", () => {
  const SHORT_TTL = `${CONFIG}lifecycle:\n  job_ttl:\n    pending: 4s\nrelay:\n  lease_seconds: 30\n`;
  const get = (g: LimitsRuntime, id: string) => g.request(`/jobs/transcription/${id}`, { headers: { "x-consumer": "alice" } });
  const deadline = async (g: LimitsRuntime, id: string) => await g.kv.zscore("conc:transcription:alice", id);

  it("frees a pending job's slot when its record expires (GET answers 410), not later", async () => {
    const g = await start(SHORT_TTL);
    // The relay is busy elsewhere (it never runs here): the job stays pending.
    const saved = await submit(g, "alice");
    expect(saved.status).toBe(202);
    const { job_id } = (await saved.json()) as { job_id: string };
    expect(await deadline(g, job_id)).toBe(g.clock.now() + 4_000);
    g.clock.advance(3_999);
    expect((await get(g, job_id)).status).toBe(200);
    expect((await submit(g, "alice")).status).toBe(429);

    g.clock.advance(1);
    expect((await get(g, job_id)).status).toBe(410);
    const next = await submit(g, "alice");
    expect(next.status).toBe(202);
    expect(next.headers.get("x-concurrent-remaining")).toBe("0");
    const { job_id: nextId } = (await next.json()) as { job_id: string };
    expect(await slots(g)).toEqual([nextId]);
  });

  it("keeps a processing job's slot past job_ttl.pending while the relay renews its lease, and frees it when the job ends", async () => {
    const g = await start(SHORT_TTL);
    const saved = await submit(g, "alice");
    const { job_id } = (await saved.json()) as { job_id: string };
    await g.relayRound();
    await until(() => g.backend.waiting.length === 1, "the relay's backend call");
    // Started and renewed at once: the record, and so the slot, live one lease plus the pending TTL.
    await until(async () => (await deadline(g, job_id)) === g.clock.now() + 30_000 + 4_000, "the slot to follow the lease renewal");

    g.clock.advance(10_000);
    const running = await get(g, job_id);
    expect(running.status).toBe(200);
    expect(((await running.json()) as { status: string }).status).toBe("processing");
    const refused = await submit(g, "alice");
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("1 jobs pending or processing");

    g.backend.answerAll();
    await g.relayIdle();
    await until(async () => (await slots(g)).length === 0, "the finished job's slot");
    expect((await submit(g, "alice")).status).toBe(202);
  });
});

describe("processing-time budget (docs/design.md#processing-time)", () => {
  /** Submits a job and lets the relay run it for `seconds` of clock time. */
  async function runJob(g: LimitsRuntime, seconds: number): Promise<Response> {
    const response = await submit(g, "alice");
    expect(response.status).toBe(202);
    await g.relayRound();
    await until(() => g.backend.waiting.length === 1, "the relay's backend call");
    g.clock.advance(seconds * 1000);
    g.backend.answerAll();
    await g.relayIdle();
    await until(async () => (await slots(g)).length === 0, "the job's slot");
    return response;
  }

  const used = async (g: LimitsRuntime) => Number((await g.kv.get("ptime:transcription:alice")) ?? "0");

  it("accumulates the relay's inference seconds; the crossing job passes, later submissions get 429 until the window resets", async () => {
    const g = await start();
    const first = await runJob(g, 45);
    expect(first.headers.get("x-processingtime-limit")).toBe("60");
    expect(first.headers.get("x-processingtime-remaining")).toBe("60");
    await until(async () => (await used(g)) === 45, "45 s counted");

    const crossing = await runJob(g, 30);
    expect(crossing.headers.get("x-processingtime-remaining")).toBe("15");
    await until(async () => (await used(g)) === 75, "75 s counted");

    const refused = await submit(g, "alice");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("x-processingtime-limit")).toBe("60");
    expect(refused.headers.get("x-processingtime-remaining")).toBe("0");
    // The window opened with the first report, when the first job ended; 30 s of its hour have passed.
    expect(refused.headers.get("retry-after")).toBe(String(3600 - 30));
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain("processing-time budget used up");

    const usage = (await (await g.request("/usage", { headers: { "x-consumer": "alice" } })).json()) as {
      usage: Array<{ service_type: string; total: Record<string, number>; window?: Record<string, unknown> }>;
    };
    expect(usage.usage).toEqual([
      {
        service_type: "transcription",
        total: { requests: 2, jobs: 2, processing_time_seconds: 75 },
        window: { processing_time_seconds: 75, reset_at: new Date(g.clock.now() + (3600 - 30) * 1000).toISOString() },
      },
    ]);

    g.clock.advance((3600 - 30) * 1000);
    const fresh = await submit(g, "alice");
    expect(fresh.status).toBe(202);
    expect(fresh.headers.get("x-processingtime-remaining")).toBe("60");
  });
});

describe("idempotent replays and the async limits (docs/design.md#idempotency)", () => {
  const LIMITED = CONFIG.replace(
    '"*": { max_concurrent: 1, processing_time: 60, processing_period: 1h }',
    '"*": { max_concurrent: 2, processing_time: 60, processing_period: 1h }',
  );
  const submitWithKey = (g: LimitsRuntime, key?: string) =>
    g.request("/jobs/transcription", { method: "POST", body: jobForm(), headers: { "x-consumer": "alice", ...(key ? { "idempotency-key": key } : {}) } });

  it("replays a key while the consumer is at max_concurrent, without taking or reporting a slot; a new key is still refused", async () => {
    const g = await start(LIMITED);
    const original = await submitWithKey(g, "K1");
    expect(original.status).toBe(202);
    expect(original.headers.get("x-concurrent-remaining")).toBe("1");
    const body = await original.json();

    const replay = await submitWithKey(g, "K1");
    expect(replay.status).toBe(200);
    expect(replay.headers.get("x-idempotent-replay")).toBe("true");
    // A replay creates nothing: it holds no slot and claims no slot count of its own.
    expect(replay.headers.get("x-concurrent-remaining")).toBeNull();
    expect(await replay.json()).toEqual(body);
    await until(async () => (await slots(g)).length === 1, "only the original job's slot");

    expect((await submitWithKey(g)).status).toBe(202);
    expect((await slots(g)).length).toBe(2);

    const atLimit = await submitWithKey(g, "K1");
    expect(atLimit.status).toBe(200);
    expect(atLimit.headers.get("x-idempotent-replay")).toBe("true");
    expect(await atLimit.json()).toEqual(body);

    const fresh = await submitWithKey(g, "K2");
    expect(fresh.status).toBe(429);
    expect(((await fresh.json()) as { error: { message: string } }).error.message).toContain("concurrent job limit reached");
    expect(await sample(g.metrics, "svc_idempotency_requests_total", { service_type: "transcription", outcome: "replayed" })).toBe(2);
  });

  it("replays a key after the processing-time budget is used up; a new key gets 429", async () => {
    const g = await start(LIMITED);
    const original = await submitWithKey(g, "K1");
    expect(original.status).toBe(202);
    await g.relayRound();
    await until(() => g.backend.waiting.length === 1, "the relay's backend call");
    g.clock.advance(75_000);
    g.backend.answerAll();
    await g.relayIdle();
    await until(async () => Number((await g.kv.get("ptime:transcription:alice")) ?? "0") === 75, "75 s counted");

    const replay = await submitWithKey(g, "K1");
    expect(replay.status).toBe(200);
    expect(replay.headers.get("x-idempotent-replay")).toBe("true");
    expect(((await replay.json()) as { job_id: string }).job_id).toBe(((await original.json()) as { job_id: string }).job_id);

    const fresh = await submitWithKey(g, "K2");
    expect(fresh.status).toBe(429);
    expect(((await fresh.json()) as { error: { message: string } }).error.message).toContain("processing-time budget used up");
  });
});

describe("limit metrics' user_type label (docs/design.md#metrics)", () => {
  // "free" has no entry for echo (it is measured by "*"), but the config names it elsewhere.
  const LABELS = CONFIG.replace('"*": { rate: 100, period: 1m }', '"*": { rate: 1, period: 1m }').replace(
    '"*": { max_concurrent: 1, processing_time: 60, processing_period: 1h }',
    '"*": { max_concurrent: 1, processing_time: 60, processing_period: 1h }\n    free: { max_concurrent: 1 }',
  );
  const echo = (g: LimitsRuntime, consumer: string, userType?: string) =>
    g.request("/v1/echo", {
      method: "POST",
      body: JSON.stringify({ model: "echo" }),
      headers: { "content-type": "application/json", "x-consumer": consumer, ...(userType ? { "x-user-type": userType } : {}) },
    });

  it('is the caller\'s user type when the config names it, else "*", never a raw header value', async () => {
    const g = await start(LABELS);
    /** A request the backend answers: its status once the body is read (which frees its sync slot). */
    const served = async (response: Promise<Response>) => {
      await until(() => g.backend.waiting.length > 0, "the backend call");
      g.backend.answerAll();
      const answer = await response;
      await answer.text();
      return answer.status;
    };
    expect(await served(echo(g, "ann", "free"))).toBe(200);
    expect((await echo(g, "ann", "free")).status).toBe(429);
    expect(await served(echo(g, "bob", "made-up-type-123"))).toBe(200);
    expect(await served(echo(g, "cid"))).toBe(200);

    const requests = (userType: string, result: string) =>
      sample(g.metrics, "svc_ratelimit_requests_total", { service_type: "echo", user_type: userType, result });
    expect(await requests("free", "allowed")).toBe(1);
    expect(await requests("free", "rejected")).toBe(1);
    expect(await sample(g.metrics, "svc_ratelimit_consumer_hits_total", { service_type: "echo", user_type: "free" })).toBe(1);
    // An unnamed user type and no user type share the bounded "*" series.
    expect(await requests("*", "allowed")).toBe(2);
    expect(await g.metrics.text()).not.toContain("made-up-type-123");
  });
});

describe("sync concurrency cap (docs/design.md#sync-concurrency-cap)", () => {
  const call = (g: LimitsRuntime, priority = false, consumer?: string) =>
    g.request("/v1/echo", {
      method: "POST",
      body: JSON.stringify({ model: "echo" }),
      headers: { "content-type": "application/json", ...(priority ? { "x-priority": "1" } : {}), ...(consumer ? { "x-consumer": consumer } : {}) },
    });
  const count = async (g: LimitsRuntime, pool: "shared" | "reserved") => Number((await g.kv.get(`sem:echo:echo:${pool}`)) ?? "0");

  it("keeps R slots for priority requests, answers 503 at once when full, and frees a slot when the body is sent", async () => {
    const g = await start();
    const normal = call(g);
    await until(() => g.backend.waiting.length === 1, "the first request at the backend");
    // The one shared slot is taken: a non-priority request is refused without reaching the backend.
    const busy = await call(g);
    expect(busy.status).toBe(503);
    expect(await busy.json()).toEqual({
      error: { message: expect.stringContaining("max_concurrent_sync 2, 1 reserved"), type: "overloaded_error", code: "concurrency_cap" },
    });
    // A priority request takes the reserved slot; a second one finds both pools full.
    const priority = call(g, true, "vip");
    await until(() => g.backend.waiting.length === 2, "the priority request at the backend");
    expect((await call(g, true)).status).toBe(503);
    expect(g.backend.calls).toHaveLength(2);
    expect([await count(g, "shared"), await count(g, "reserved")]).toEqual([1, 1]);

    g.backend.waiting[0].answer(Response.json({ done: 1 }));
    const answered = await normal;
    expect(answered.status).toBe(200);
    // Held until the body is read (the response could still be streaming).
    expect(await count(g, "shared")).toBe(1);
    expect(await answered.json()).toEqual({ done: 1 });
    await until(async () => (await count(g, "shared")) === 0, "the shared slot to be released");
    g.backend.answerAll();
    await (await priority).text();
    await until(async () => (await count(g, "reserved")) === 0, "the reserved slot to be released");
  });

  it("frees the slot when the client goes away mid-stream", async () => {
    const g = await start();
    const pending = call(g);
    await until(() => g.backend.waiting.length === 1, "the request at the backend");
    // The backend streams and never ends on its own.
    g.backend.waiting[0].answer(new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode("data: 1\n\n")) })));
    const response = await pending;
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    expect(await count(g, "shared")).toBe(1);
    await reader.cancel();
    await until(async () => (await count(g, "shared")) === 0, "the slot of the abandoned stream");
  });

  it("fails open when the store fails: requests are served and the errors counted", async () => {
    const broken = new MemoryKv();
    const failing = new Proxy(broken, {
      get(target, property, receiver) {
        if (property === "run" || property === "get") return () => Promise.reject(new Error("store down"));
        return Reflect.get(target, property, receiver);
      },
    });
    const g = await start(CONFIG, failing);
    const pending = call(g, false, "alice");
    await until(() => g.backend.waiting.length === 1, "the request at the backend");
    // Without the store there is no cap: a second request is not refused either.
    const second = call(g, false, "alice");
    await until(() => g.backend.waiting.length === 2, "the second request at the backend");
    g.backend.answerAll();
    expect((await pending).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(await sample(g.metrics, "svc_ratelimit_errors_total", { service_type: "echo" })).toBeGreaterThanOrEqual(4);
    await broken.close();
  });
});
