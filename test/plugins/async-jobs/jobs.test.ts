/**
 * Async jobs in-process (memory KV + file objects, the relay driven by the test): what a
 * client sees of submission, reading, cancelling, listing, purging and idempotency, and
 * what is left in the stores. The e2e suite repeats the main paths against real processes,
 * Redis and S3.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { definePlugin } from "../../../core/plugins/types.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { ObjectStore } from "../../../core/stores/objects.ts";
import { type InferenceBackend, startInferenceBackend } from "../../fixtures/inference-backend.ts";
import { onDeno, waitUntil } from "../../support/gateway-process.ts";
import { freePort } from "../../support/servers.ts";
import { type HarnessOptions, jobForm, type JobsRuntime, jobsRuntime } from "./harness.ts";

let backend: InferenceBackend;
beforeAll(async () => {
  backend = await startInferenceBackend();
});
afterAll(async () => {
  await backend.close();
});

const open: JobsRuntime[] = [];
afterEach(async () => {
  backend.release();
  for (const gw of open.splice(0)) await gw.close();
});
beforeEach(() => {
  backend.received.length = 0;
  backend.runs.clear();
  backend.aborts = 0;
});

const services = () => `
services:
  - type: asr
    model: whisper
    default: true
    inference_url: ${backend.url}
    operations: { transcribe: ["/v1/audio/transcriptions"] }
    accepted_exts: [wav, .MP3]
    max_file_size_mb: 0.001
  - type: asr
    model: whisper-large
    backend_model: openai/whisper-large-v3
    inference_url: ${backend.url}
    operations: { transcribe: ["/transcribe"], translate: ["/translate"] }
    max_file_size_mb: 0.002
  - type: broken
    model: failing
    inference_url: ${backend.url}
    operations: { run: ["/fail"] }
  - type: texts
    model: plain
    inference_url: ${backend.url}
    operations: { run: ["/text/{model}"] }
`;

/** Stands in for the webhooks plugin where a test only needs callback URLs accepted. */
const acceptingWebhooks = definePlugin({
  name: "webhooks",
  setup(api) {
    api.provide("webhooks", { validateCallbackUrl: async () => null, notify: async () => {} });
  },
});

async function start(extra = "", options: HarnessOptions = {}): Promise<JobsRuntime> {
  const gw = await jobsRuntime(`${extra}\n${services()}`, options);
  open.push(gw);
  return gw;
}

interface Accepted {
  job_id: string;
  service_type: string;
  model: string;
  status: string;
}

async function submit(
  gw: JobsRuntime,
  type: string,
  fields: Record<string, string> = {},
  file: { name: string; content: string | Uint8Array<ArrayBuffer> } | undefined = { name: "clip.wav", content: "audio" },
  headers: Record<string, string> = {},
  fileFirst = false,
): Promise<Response> {
  return await gw.request(`/jobs/${type}`, { method: "POST", body: jobForm(fields, file, fileFirst), headers });
}

async function accepted(response: Response): Promise<Accepted> {
  expect(response.status).toBe(202);
  return (await response.json()) as Accepted;
}

async function objectKeys(objects: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const info of objects.list("jobs/")) keys.push(info.key);
  return keys;
}

async function errorOf(response: Response): Promise<string> {
  const body = (await response.json()) as { error: { message: string } };
  return body.error.message;
}

describe("submission", () => {
  it("accepts a multipart upload, stores the file and queues a pending job (202, docs/design.md#job-submission)", async () => {
    const gw = await start();
    const job = await accepted(await submit(gw, "asr"));
    expect(job).toEqual({
      job_id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      service_type: "asr",
      model: "whisper",
      status: "pending",
    });
    expect(await objectKeys(gw.objects)).toEqual([`jobs/${job.job_id}/input`]);
    expect(await gw.kv.lrange("relay:whisper", 0, -1)).toEqual([job.job_id]);
    const record = await gw.request(`/jobs/asr/${job.job_id}`);
    expect(record.status).toBe(200);
    expect(await record.json()).toEqual({
      id: job.job_id,
      status: "pending",
      service_type: "asr",
      model: "whisper",
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      priority: false,
      attempts: 0,
    });
  });

  it("reads fields that come after the file part, and resolves the model then", async () => {
    const gw = await start();
    const job = await accepted(await submit(gw, "asr", { model: "whisper-large", operation: "translate" }, { name: "x.ogg", content: "bonjour" }, {}, true));
    expect(job.model).toBe("whisper-large");
    await gw.relay();
    expect(backend.received).toMatchObject([{ path: "/translate", model: "openai/whisper-large-v3", filename: "x.ogg", content: "bonjour" }]);
  });

  it("refuses a wrong extension with 400 naming the accepted ones, before or after the file part", async () => {
    const gw = await start();
    for (const fileFirst of [false, true]) {
      const response = await submit(gw, "asr", { model: "whisper" }, { name: "notes.txt", content: "x" }, {}, fileFirst);
      expect(response.status).toBe(400);
      expect(await errorOf(response)).toContain("accepted extensions: .wav, .mp3");
    }
    // Case-insensitive, with or without the dot in the config.
    await accepted(await submit(gw, "asr", {}, { name: "LOUD.WAV", content: "x" }));
    await accepted(await submit(gw, "asr", {}, { name: "song.mp3", content: "x" }));
    expect(await objectKeys(gw.objects)).toHaveLength(2);
  });

  it("cuts an oversize upload off with 413 and leaves no object behind", async () => {
    const gw = await start();
    const big = new Uint8Array(1500).fill(97);
    // `model` first: whisper's own 0.001 MB limit applies while streaming.
    const early = await submit(gw, "asr", { model: "whisper" }, { name: "big.wav", content: big });
    expect(early.status).toBe(413);
    expect(await errorOf(early)).toContain("max_file_size_mb");
    // File first: the type's largest limit (0.002 MB) while streaming, then whisper's after resolving.
    const late = await submit(gw, "asr", { model: "whisper" }, { name: "big.wav", content: big }, {}, true);
    expect(late.status).toBe(413);
    const huge = await submit(gw, "asr", {}, { name: "huge.wav", content: new Uint8Array(5000) }, {}, true);
    expect(huge.status).toBe(413);
    expect(await objectKeys(gw.objects)).toEqual([]);
    expect(await gw.kv.llen("relay:whisper")).toBe(0);
  });

  it("answers missing file, unknown type, unknown model and operation errors, storing nothing", async () => {
    const gw = await start();
    const missing = await gw.request("/jobs/asr", { method: "POST", body: jobForm({ model: "whisper" }) });
    expect(missing.status).toBe(400);
    expect(await errorOf(missing)).toContain('missing the "file" part');

    const textField = new FormData();
    textField.append("file", "not a file");
    const notFile = await gw.request("/jobs/asr", { method: "POST", body: textField });
    expect(notFile.status).toBe(400);
    expect(await errorOf(notFile)).toContain("must be a file upload");

    const notMultipart = await gw.request("/jobs/asr", { method: "POST", body: "{}", headers: { "content-type": "application/json" } });
    expect(notMultipart.status).toBe(400);
    expect(await errorOf(notMultipart)).toContain("multipart/form-data");

    const unknownType = await submit(gw, "nope");
    expect(unknownType.status).toBe(404);
    expect(await errorOf(unknownType)).toContain('unknown service type "nope"');

    const unknownModel = await submit(gw, "asr", { model: "gpt-9" });
    expect(unknownModel.status).toBe(404);
    expect(await errorOf(unknownModel)).toContain("available models: whisper, whisper-large");

    const ambiguous = await submit(gw, "asr", { model: "whisper-large" });
    expect(ambiguous.status).toBe(400);
    expect(await errorOf(ambiguous)).toContain("transcribe, translate");

    const unknownOperation = await submit(gw, "asr", { model: "whisper-large", operation: "summarize" });
    expect(unknownOperation.status).toBe(400);
    expect(await errorOf(unknownOperation)).toContain('unknown operation "summarize"');

    const badCallback = await submit(gw, "asr", { callback_url: "ftp://example.com/x" });
    expect(badCallback.status).toBe(400);

    // No webhooks plugin in this runtime: a callback would never be sent, so it is refused.
    const noWebhooks = await submit(gw, "asr", { callback_url: "https://hooks.example.com/done" });
    expect(noWebhooks.status).toBe(400);
    expect(await errorOf(noWebhooks)).toContain("webhooks are turned off");

    expect(await objectKeys(gw.objects)).toEqual([]);
    expect(await gw.kv.scan("job:", "0", 1000)).toMatchObject({ keys: [] });
  });

  it("answers 400 for a malformed or interrupted multipart body, leaving no object behind", async () => {
    const gw = await start();
    const malformed = await gw.request("/jobs/asr", {
      method: "POST",
      body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\npartial',
      headers: { "content-type": "multipart/form-data; boundary=xyz" },
    });
    expect(malformed.status).toBe(400);
    expect(await errorOf(malformed)).toContain("malformed multipart body");

    const encoder = new TextEncoder();
    const interrupted = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode('--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nsome bytes'));
      },
      pull(controller) {
        controller.error(new Error("connection reset"));
      },
    });
    const cut = await gw.request("/jobs/asr", {
      method: "POST",
      body: interrupted,
      headers: { "content-type": "multipart/form-data; boundary=xyz" },
      duplex: "half",
    } as RequestInit);
    expect(cut.status).toBe(400);
    expect(await errorOf(cut)).toContain("interrupted");
    expect(await objectKeys(gw.objects)).toEqual([]);
    expect(await gw.kv.llen("relay:whisper")).toBe(0);
  });

  it("answers 500 and creates no job when the object store fails", async () => {
    const gw = await start("", {
      objects: {
        kind: "broken",
        put: () => Promise.reject(new Error("disk on fire")),
        get: () => Promise.resolve(null),
        delete: () => Promise.resolve(),
        list: async function* () {},
        ping: () => Promise.resolve(),
        close: () => Promise.resolve(),
      },
    });
    const response = await submit(gw, "asr");
    expect(response.status).toBe(500);
    expect(await errorOf(response)).toContain("object store");
    expect(await gw.kv.llen("relay:whisper")).toBe(0);
  });

  it("answers 503 and removes the uploaded file when the KV store fails to save the job", async () => {
    const { MemoryKv } = await import("../../../adapters/kv-memory/index.ts");
    const memory = new MemoryKv();
    const failing = new Proxy(memory, {
      get(target, property, receiver) {
        if (property === "run") return () => Promise.reject(new Error("connection lost"));
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as KvStore;
    const gw = await start("", { kv: failing });
    const response = await submit(gw, "asr");
    expect(response.status).toBe(503);
    expect(await objectKeys(gw.objects)).toEqual([]);
    await memory.close();
  });

  it("counts no svc_jobs_by_consumer_total without server.consumer_header (docs/design.md#consumers-and-ownership)", async () => {
    const gw = await start("server:\n  priority_header: X-Priority");
    await accepted(await submit(gw, "asr"));
    await accepted(await submit(gw, "asr", {}, undefined, { "x-priority": "1", "x-consumer": "ann" }));
    const metrics = await gw.metrics.text();
    expect(metrics).toContain("svc_relay_queue_depth 2");
    expect(metrics).not.toContain("svc_jobs_by_consumer_total{");
  });

  it("puts a priority job at the head of its queue and counts submissions by mode", async () => {
    const gw = await start(
      "server:\n  priority_header: X-Priority\n  consumer_header: X-Consumer\nrelay:\n  concurrency: 1\nmetrics:\n  consumer_labels: true",
    );
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      ids.push((await accepted(await submit(gw, "asr", {}, { name: `${n}.wav`, content: `normal-${n}` }, { "x-consumer": "ann" }))).job_id);
    }
    const urgent = await accepted(await submit(gw, "asr", {}, { name: "p.wav", content: "urgent" }, { "x-priority": "1", "x-consumer": "ann" }));
    expect(await gw.kv.lrange("relay:whisper", 0, -1)).toEqual([urgent.job_id, ...ids]);
    const record = (await (await gw.request(`/jobs/asr/${urgent.job_id}`)).json()) as { priority: boolean; consumer_name: string };
    expect(record).toMatchObject({ priority: true, consumer_name: "ann" });

    const metrics = await gw.metrics.text();
    expect(metrics).toContain('svc_jobs_by_consumer_total{mode="async",service_type="asr",model="whisper",consumer="ann"} 3');
    expect(metrics).toContain('svc_jobs_by_consumer_total{mode="async-priority",service_type="asr",model="whisper",consumer="ann"} 1');
    expect(metrics).toContain("svc_relay_queue_depth 4");

    while ((await gw.kv.llen("relay:whisper")) > 0) await gw.relay();
    expect(backend.received.map((r) => r.content)).toEqual(["urgent", "normal-1", "normal-2", "normal-3"]);
  });
});

describe("submission forms the gateway refuses", () => {
  /** A form with the given fields in order (repeats kept) and a wav file, placed first or last. */
  function form(fields: Array<[string, string]>, fileFirst: boolean): FormData {
    const out = new FormData();
    const file = () => out.append("file", new Blob(["audio"], { type: "audio/wav" }), "clip.wav");
    if (fileFirst) file();
    for (const [name, value] of fields) out.append(name, value);
    if (!fileFirst) file();
    return out;
  }

  it("answers 400 for a field the gateway reads sent twice (two models), before or after the file, and stores nothing", async () => {
    const gw = await start();
    for (const fileFirst of [false, true]) {
      for (const name of ["model", "operation", "callback_url"]) {
        const values = name === "model"
          ? ["whisper", "whisper-large"]
          : name === "operation"
          ? ["transcribe", "translate"]
          : ["http://a.example/hook", "http://b.example/hook"];
        const response = await gw.request("/jobs/asr", { method: "POST", body: form([[name, values[0]], [name, values[1]]], fileFirst) });
        expect(response.status, `${name}, file first: ${fileFirst}`).toBe(400);
        expect(await response.json()).toEqual({
          error: { type: "invalid_request_error", code: "invalid_request", message: `form field "${name}" was sent more than once; send it once` },
        });
      }
    }
    expect(await objectKeys(gw.objects)).toEqual([]);
    expect(await gw.kv.llen("relay:whisper")).toBe(0);
    expect(await gw.kv.llen("relay:whisper-large")).toBe(0);
    // A field the gateway does not read may repeat, as OpenAI's timestamp_granularities[] does.
    const accepted_ = await gw.request("/jobs/asr", {
      method: "POST",
      body: form([["model", "whisper"], ["timestamp_granularities[]", "word"], ["timestamp_granularities[]", "segment"]], false),
    });
    expect((await accepted(accepted_)).model).toBe("whisper");
  });

  it('answers 400 for an empty multipart boundary (boundary="") and stores nothing', async () => {
    const gw = await start();
    const body = '--\r\nContent-Disposition: form-data; name="file"; filename="clip.wav"\r\nContent-Type: audio/wav\r\n\r\naudio\r\n----\r\n';
    for (const contentType of ['multipart/form-data; boundary=""', "multipart/form-data; boundary=", 'multipart/form-data; charset=utf-8; BOUNDARY = ""']) {
      const response = await gw.request("/jobs/asr", { method: "POST", headers: { "content-type": contentType }, body });
      expect(response.status, contentType).toBe(400);
      expect(await response.json()).toEqual({
        error: {
          type: "invalid_request_error",
          code: "invalid_request",
          message:
            'the multipart boundary is empty (boundary=""); give the boundary that separates the body\'s parts (1 to 70 characters), or let the HTTP client set the content type',
        },
      });
    }
    expect(await objectKeys(gw.objects)).toEqual([]);
    expect(await gw.kv.llen("relay:whisper")).toBe(0);
  });
});

describe("relay results", () => {
  it("runs a job to completed with the backend's JSON as result, and counts it", async () => {
    const gw = await start();
    const job = await accepted(await submit(gw, "asr", {}, { name: "clip.wav", content: "hello there" }));
    await gw.relay();
    // The input is not needed once the job is done; the result stays with the record.
    expect(await objectKeys(gw.objects)).toEqual([`jobs/${job.job_id}/result`]);
    const record = (await (await gw.request(`/jobs/asr/${job.job_id}`)).json()) as Record<string, unknown>;
    expect(record).toMatchObject({ status: "completed", result: { path: "/v1/audio/transcriptions", model: "whisper", filename: "clip.wav", size: 11 } });
    expect(record).not.toHaveProperty("error");
    // Node's fetch sends the computed Content-Length (Deno's always streams chunked).
    if (!onDeno) expect(backend.received[0]).toMatchObject({ transferEncoding: "", contentLength: expect.stringMatching(/^\d+$/) });
    const metrics = await gw.metrics.text();
    expect(metrics).toContain('svc_relay_jobs_total{model="whisper",outcome="completed"} 1');
    expect(metrics).toMatch(/svc_relay_inference_duration_seconds_count\{model="whisper"\} 1/);
  });

  it("emits job.submitted, relay.processed and job.terminal (with the result) for the plugins that follow jobs", async () => {
    const gw = await start("server:\n  consumer_header: X-Consumer\n  user_type_header: X-User-Type", { plugins: [acceptingWebhooks] });
    const job = await accepted(
      await submit(gw, "asr", { callback_url: "https://hooks.example.com/done" }, undefined, { "x-consumer": "ann", "x-user-type": "pro" }),
    );
    await gw.relay();
    expect(gw.events.map((e) => e.name)).toEqual(["job.submitted", "relay.processed", "job.terminal"]);
    expect(gw.events[0].payload).toMatchObject({
      job: { id: job.job_id, status: "pending", consumer_name: "ann", user_type: "pro", callback_url: "https://hooks.example.com/done" },
    });
    expect(gw.events[1].payload).toEqual({ consumer: "ann", userType: "pro", serviceType: "asr", model: "whisper", seconds: expect.any(Number) });
    expect(gw.events[2].payload).toMatchObject({ job: { id: job.job_id, status: "completed", completed_at: expect.any(String) }, result: { size: 5 } });

    const cancelled = await accepted(await submit(gw, "asr"));
    await gw.request(`/jobs/asr/${cancelled.job_id}`, { method: "DELETE" });
    expect(gw.events.at(-1)).toMatchObject({ name: "job.terminal", payload: { job: { id: cancelled.job_id, status: "cancelled" } } });
  });

  it("fails a job with a useful error when the backend answers 500", async () => {
    const gw = await start();
    const job = await accepted(await submit(gw, "broken", {}, { name: "in.bin", content: "x" }));
    await gw.relay();
    const record = (await (await gw.request(`/jobs/broken/${job.job_id}`)).json()) as Record<string, unknown>;
    expect(record.status).toBe("failed");
    expect(record.error).toContain("HTTP 500");
    expect(record.error).toContain("inference exploded");
    expect(record).not.toHaveProperty("result");
  });

  it("wraps a non-JSON answer with its content type, and fills {model} in the operation path", async () => {
    const gw = await start();
    const job = await accepted(await submit(gw, "texts", {}, { name: "in.txt", content: "words" }));
    await gw.relay();
    const record = (await (await gw.request(`/jobs/texts/${job.job_id}`)).json()) as Record<string, unknown>;
    expect(record.result).toEqual({ content_type: "text/plain; charset=utf-8", body: "transcript of words" });
    expect(backend.received[0].path).toBe("/text/plain");
  });

  it("fails a job whose backend is unreachable", async () => {
    const port = await freePort();
    const gw = await jobsRuntime(`
services:
  - type: asr
    model: gone
    inference_url: http://127.0.0.1:${port}
`);
    open.push(gw);
    const job = await accepted(await submit(gw, "asr"));
    await gw.relay();
    const record = (await (await gw.request(`/jobs/asr/${job.job_id}`)).json()) as Record<string, unknown>;
    expect(record.status).toBe("failed");
    expect(record.error).toMatch(new RegExp(`the backend request failed: http://127\\.0\\.0\\.1:${port}: .*(ECONNREFUSED|refused)`, "i"));
  });
});

describe("reading jobs", () => {
  const owned = "server:\n  consumer_header: X-Consumer";

  it("applies the ownership rule: another consumer's job is 404, no header bypasses", async () => {
    const gw = await start(owned);
    const job = await accepted(await submit(gw, "asr", {}, undefined, { "x-consumer": "ann" }));
    expect((await gw.request(`/jobs/asr/${job.job_id}`, { headers: { "x-consumer": "ann" } })).status).toBe(200);
    expect((await gw.request(`/jobs/asr/${job.job_id}`)).status).toBe(200);
    const other = await gw.request(`/jobs/asr/${job.job_id}`, { headers: { "x-consumer": "bob" } });
    expect(other.status).toBe(404);
    expect((await gw.request(`/jobs/broken/${job.job_id}`)).status).toBe(404);
    expect((await gw.request(`/jobs/asr/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await gw.request("/jobs/asr/not-a-uuid")).status).toBe(404);
    expect((await gw.request(`/jobs/asr/${job.job_id}`, { method: "DELETE", headers: { "x-consumer": "bob" } })).status).toBe(404);
  });

  it("answers 410 while the tombstone lives after the record's TTL, then 404", async () => {
    const clock = new ManualClock();
    const gw = await start("lifecycle:\n  job_ttl:\n    pending: 1s\njobs:\n  expired_marker_ttl: 2s", { clock });
    const job = await accepted(await submit(gw, "asr"));
    clock.advance(900);
    expect((await gw.request(`/jobs/asr/${job.job_id}`)).status).toBe(200);
    clock.advance(200);
    const expired = await gw.request(`/jobs/asr/${job.job_id}`);
    expect(expired.status).toBe(410);
    expect(await expired.json()).toEqual({ status: "expired" });
    clock.advance(2000);
    expect((await gw.request(`/jobs/asr/${job.job_id}`)).status).toBe(404);
  });

  it("keeps a processing job past job_ttl.pending while the relay works on it, and delivers its result", async () => {
    const clock = new ManualClock();
    const gw = await start("lifecycle:\n  job_ttl:\n    pending: 4s\n    completed: 60s\n    failed: 60s\nrelay:\n  lease_seconds: 30", { clock });
    const job = await accepted(await submit(gw, "asr"));
    backend.hold();
    const relaying = gw.relay();
    await waitUntil(() => backend.held === 1);
    // The relay's first heartbeat (lease renewal) has extended the record: lease + pending TTL.
    await waitUntil(async () => (await gw.kv.pttl(`job:${job.job_id}`)) > 4_000);
    clock.advance(10_000);
    const running = await gw.request(`/jobs/asr/${job.job_id}`);
    expect(running.status).toBe(200);
    expect(((await running.json()) as { status: string }).status).toBe("processing");

    backend.release();
    await relaying;
    const done = await gw.request(`/jobs/asr/${job.job_id}`);
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ status: "completed", result: { size: 5 } });
    expect(await gw.metrics.text()).toContain('svc_relay_jobs_total{model="whisper",outcome="completed"} 1');
  });

  it("uses per-status TTLs with the global fallback and the 2 h safety net", async () => {
    const gw = await start("lifecycle:\n  persists_result: true\n  job_ttl:\n    global: 5m\n    completed: 1h");
    const job = await accepted(await submit(gw, "asr"));
    expect(await gw.kv.pttl(`job:${job.job_id}`)).toBeGreaterThan(4 * 60_000);
    expect(await gw.kv.pttl(`job:${job.job_id}`)).toBeLessThanOrEqual(5 * 60_000);
    await gw.relay();
    expect(await gw.kv.pttl(`job:${job.job_id}`)).toBeGreaterThan(59 * 60_000);
    const other = await start();
    const second = await accepted(await submit(other, "asr"));
    expect(await other.kv.pttl(`job:${second.job_id}`)).toBeGreaterThan(119 * 60_000);
  });

  it("persists_result=false: the first GET of a completed job returns the result and deletes it", async () => {
    const gw = await start("lifecycle:\n  persists_result: false");
    const job = await accepted(await submit(gw, "asr"));
    expect(((await (await gw.request(`/jobs/asr/${job.job_id}`)).json()) as { status: string }).status).toBe("pending");
    await gw.relay();
    const first = await gw.request(`/jobs/asr/${job.job_id}`);
    expect(first.status).toBe(200);
    expect(((await first.json()) as { result: { size: number } }).result.size).toBe(5);
    expect(await objectKeys(gw.objects)).toEqual([]);
    expect(await gw.kv.exists(`job:${job.job_id}`)).toBe(false);
    expect((await gw.request(`/jobs/asr/${job.job_id}`)).status).toBe(410);
  });

  it("persists_result=true keeps the result readable", async () => {
    const gw = await start("lifecycle:\n  persists_result: true");
    const job = await accepted(await submit(gw, "asr"));
    await gw.relay();
    for (let i = 0; i < 2; i++) expect((await gw.request(`/jobs/asr/${job.job_id}`)).status).toBe(200);
  });
});

describe("DELETE", () => {
  it("cancels a pending job at once, removes it from the queue, and it never runs", async () => {
    const gw = await start();
    const job = await accepted(await submit(gw, "asr"));
    const response = await gw.request(`/jobs/asr/${job.job_id}`, { method: "DELETE" });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ job_id: job.job_id, status: "cancelled" });
    expect(await gw.kv.llen("relay:whisper")).toBe(0);
    await gw.relay();
    expect(backend.received).toEqual([]);
    expect(((await (await gw.request(`/jobs/asr/${job.job_id}`)).json()) as { status: string }).status).toBe("cancelled");
    expect(await objectKeys(gw.objects)).toEqual([]);
    // Terminal: a second DELETE changes nothing and says so.
    expect(await (await gw.request(`/jobs/asr/${job.job_id}`, { method: "DELETE" })).json()).toEqual({ job_id: job.job_id, status: "cancelled" });
  });

  it("signals a processing job; the relay aborts the backend call and marks it cancelled", async () => {
    const gw = await start();
    const job = await accepted(await submit(gw, "asr"));
    backend.hold();
    const relaying = gw.relay();
    for (let i = 0; backend.held === 0; i++) {
      expect(i).toBeLessThan(400);
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(((await (await gw.request(`/jobs/asr/${job.job_id}`)).json()) as { status: string }).status).toBe("processing");
    const response = await gw.request(`/jobs/asr/${job.job_id}`, { method: "DELETE" });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ job_id: job.job_id, status: "processing" });
    await relaying;
    expect(((await (await gw.request(`/jobs/asr/${job.job_id}`)).json()) as { status: string }).status).toBe("cancelled");
    for (let i = 0; backend.aborts === 0; i++) {
      expect(i).toBeLessThan(400);
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(await gw.kv.llen("relay:whisper:processing")).toBe(0);
    expect(await gw.metrics.text()).toContain('svc_relay_jobs_total{model="whisper",outcome="cancelled"} 1');
  });
});

describe("GET /jobs", () => {
  it("is 400 without server.consumer_header, and without the header in the request", async () => {
    const gw = await start();
    expect((await gw.request("/jobs")).status).toBe(400);
    const withHeader = await start("server:\n  consumer_header: X-Consumer");
    const response = await withHeader.request("/jobs");
    expect(response.status).toBe(400);
    expect(await errorOf(response)).toContain("X-Consumer");
  });

  it("lists the caller's jobs most recent first, filtered and paginated", async () => {
    const clock = new ManualClock();
    const gw = await start("server:\n  consumer_header: X-Consumer", { clock });
    const ann = { "x-consumer": "ann" };
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await accepted(await submit(gw, "asr", {}, undefined, ann))).job_id);
      clock.advance(1000);
    }
    const broken = (await accepted(await submit(gw, "broken", {}, { name: "b.bin", content: "b" }, ann))).job_id;
    clock.advance(1000);
    await accepted(await submit(gw, "asr", {}, undefined, { "x-consumer": "bob" }));
    await gw.request(`/jobs/asr/${ids[0]}`, { method: "DELETE" });

    const all = (await (await gw.request("/jobs", { headers: ann })).json()) as {
      total: number;
      limit: number;
      offset: number;
      jobs: Array<{ id: string; status: string }>;
    };
    expect(all.total).toBe(6);
    expect(all.limit).toBe(20);
    expect(all.offset).toBe(0);
    expect(all.jobs.map((j) => j.id)).toEqual([broken, ...[...ids].reverse()]);

    const page = (await (await gw.request("/jobs?service_type=asr&limit=2&offset=1", { headers: ann })).json()) as typeof all;
    expect(page).toMatchObject({ total: 5, limit: 2, offset: 1 });
    expect(page.jobs.map((j) => j.id)).toEqual([ids[3], ids[2]]);

    const cancelled = (await (await gw.request("/jobs?status=cancelled", { headers: ann })).json()) as typeof all;
    expect(cancelled.jobs.map((j) => [j.id, j.status])).toEqual([[ids[0], "cancelled"]]);

    expect(((await (await gw.request("/jobs?limit=500", { headers: ann })).json()) as typeof all).limit).toBe(100);
    expect((await gw.request("/jobs?status=weird", { headers: ann })).status).toBe(400);
    expect((await gw.request("/jobs?limit=0", { headers: ann })).status).toBe(400);
    expect((await gw.request("/jobs?offset=-1", { headers: ann })).status).toBe(400);
    // One reading of page parameters everywhere: digits only, a huge limit is cut to the maximum.
    const offset1e3 = await gw.request("/jobs?offset=1e3", { headers: ann });
    expect([offset1e3.status, await offset1e3.json()]).toEqual([400, {
      error: { message: 'query parameter "offset" must be a whole number of at least 0; got "1e3"', type: "invalid_request_error", code: "invalid_request" },
    }]);
    expect(((await (await gw.request("/jobs?limit=99999999999999999999", { headers: ann })).json()) as typeof all).limit).toBe(100);
  });
});

describe("POST /-/jobs/purge", () => {
  it("deletes every record and file of a model, and nothing of others", async () => {
    const gw = await start("lifecycle:\n  persists_result: true");
    const done = await accepted(await submit(gw, "asr"));
    await gw.relay();
    const pending = await accepted(await submit(gw, "asr"));
    const other = await accepted(await submit(gw, "broken", {}, { name: "x.bin", content: "x" }));
    const response = await gw.request("/-/jobs/purge", {
      method: "POST",
      body: JSON.stringify({ model: "whisper" }),
      headers: { "content-type": "application/json" },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ model: "whisper", deleted: 2 });
    for (const id of [done.job_id, pending.job_id]) expect((await gw.request(`/jobs/asr/${id}`)).status).toBe(404);
    expect((await gw.request(`/jobs/broken/${other.job_id}`)).status).toBe(200);
    expect(await objectKeys(gw.objects)).toEqual([`jobs/${other.job_id}/input`]);
    expect(await gw.kv.llen("relay:whisper")).toBe(0);
    expect((await gw.request("/-/jobs/purge", { method: "POST", body: "{}", headers: { "content-type": "application/json" } })).status).toBe(400);
  });

  it("refuses a model name longer than 256 characters, naming the bound", async () => {
    const gw = await start();
    const purge = (model: string) =>
      gw.request("/-/jobs/purge", { method: "POST", body: JSON.stringify({ model }), headers: { "content-type": "application/json" } });
    const refused = await purge("m".repeat(10 * 1024));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: {
        type: "invalid_request_error",
        code: "invalid_request",
        message: '"model": at most 256 characters (got 10240); name the model alias whose jobs to delete',
      },
    });
    expect(await (await purge("m".repeat(256))).json()).toEqual({ model: "m".repeat(256), deleted: 0 });
  });
});

describe("idempotency", () => {
  const owned = "server:\n  consumer_header: X-Consumer";

  it("replays the original body with 200 while the job exists, scoped per consumer", async () => {
    const gw = await start(owned);
    const headers = { "idempotency-key": "k-1", "x-consumer": "ann" };
    const first = await accepted(await submit(gw, "asr", {}, undefined, headers));
    const again = await submit(gw, "asr", {}, undefined, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get("x-idempotent-replay")).toBe("true");
    expect(await again.json()).toEqual(first);
    // Another consumer's key space: a new job.
    const bob = await accepted(await submit(gw, "asr", {}, undefined, { "idempotency-key": "k-1", "x-consumer": "bob" }));
    expect(bob.job_id).not.toBe(first.job_id);
    expect(await objectKeys(gw.objects)).toHaveLength(2);
    const metrics = await gw.metrics.text();
    expect(metrics).toContain('svc_idempotency_requests_total{service_type="asr",outcome="created"} 2');
    expect(metrics).toContain('svc_idempotency_requests_total{service_type="asr",outcome="replayed"} 1');
  });

  it("answers 409 when the key was used for a job of another service type", async () => {
    const gw = await start(owned);
    const headers = { "idempotency-key": "k-3", "x-consumer": "ann" };
    const first = await accepted(await submit(gw, "asr", {}, undefined, headers));
    const other = await gw.request("/jobs/broken", { method: "POST", body: jobForm({}), headers });
    expect(other.status).toBe(409);
    expect(await other.json()).toEqual({
      error: {
        message: `Idempotency-Key "k-3" was already used for job ${first.job_id} of service type "asr"; send a new key for a job of service type "broken"`,
        type: "conflict_error",
        code: "idempotency_conflict",
      },
    });
    // The original still replays on its own type, and nothing was stored for the refused one.
    expect((await submit(gw, "asr", {}, undefined, headers)).status).toBe(200);
    expect(await objectKeys(gw.objects)).toHaveLength(1);
  });

  it("answers 409 when the key's job is gone", async () => {
    const gw = await start(owned);
    const headers = { "idempotency-key": "k-2" };
    await accepted(await submit(gw, "asr", {}, undefined, headers));
    expect(
      (await gw.request("/-/jobs/purge", { method: "POST", body: JSON.stringify({ model: "whisper" }), headers: { "content-type": "application/json" } }))
        .status,
    ).toBe(200);
    const again = await submit(gw, "asr", {}, undefined, headers);
    expect(again.status).toBe(409);
    expect(await errorOf(again)).toContain("k-2");
    expect(await gw.metrics.text()).toContain('svc_idempotency_requests_total{service_type="asr",outcome="conflict"} 1');
  });

  it("gives 20 parallel submissions with distinct keys 20 jobs, and racing duplicates one", async () => {
    const gw = await start(owned);
    const distinct = await Promise.all(Array.from({ length: 20 }, (_, i) => submit(gw, "asr", {}, undefined, { "idempotency-key": `d-${i}` })));
    const ids = new Set(await Promise.all(distinct.map(async (r) => (await accepted(r)).job_id)));
    expect(ids.size).toBe(20);

    const racing = await Promise.all(Array.from({ length: 5 }, () => submit(gw, "asr", {}, undefined, { "idempotency-key": "same" })));
    expect(racing.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 202]);
    const bodies = (await Promise.all(racing.map((r) => r.json()))) as Accepted[];
    expect(new Set(bodies.map((b) => b.job_id)).size).toBe(1);
    expect(await objectKeys(gw.objects)).toHaveLength(21);
  });
});

describe("roles", () => {
  it("in a relay process the jobs service exists but no route is served", async () => {
    const gw = await start("", { role: "relay" });
    expect(gw.runtime.activePlugins).toEqual(["async-jobs", "relay", "test-probe"]);
    expect((await submit(gw, "asr")).status).toBe(404);
  });

  it("runs the relay in the gateway only when embedded (default with the embedded KV store)", async () => {
    expect((await start()).runtime.activePlugins).toContain("relay");
    expect((await start("relay:\n  embedded: false")).runtime.activePlugins).not.toContain("relay");
    expect((await start("redis:\n  addr: 127.0.0.1:1")).runtime.activePlugins).not.toContain("relay");
  });
});
