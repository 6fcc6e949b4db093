/**
 * The sync direct proxy as a user meets it (docs/design.md#sync-direct-proxy,
 * docs/design.md#model-list, docs/design.md#sync-requests, docs/design.md#backend-credentials and
 * docs/design.md#errors): the real gateway process in front of fake backends from test/fixtures,
 * run in this process.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Behaviour, type FakeBackend, type RecordedRequest, startBackend } from "../fixtures/http-backend.ts";
import { multipartUpload } from "../fixtures/multipart-stream.ts";
import { type GatewayProcess, onDeno, startGateway, waitUntil } from "../support/gateway-process.ts";
import { rawRequest } from "../support/raw-http.ts";
import { watchRss } from "../support/process-memory.ts";
import { freePort } from "../support/servers.ts";

const MIB = 1024 * 1024;

interface Echo {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body: string;
}

interface ErrorBody {
  error: { message: string; type: string };
}

const names = ["echo", "echo2", "f1", "f2", "f3", "fallback", "fourxx", "heavy", "light", "sse", "count", "hang"] as const;
type Name = (typeof names)[number];
let fakes: Record<Name, FakeBackend>;
let deadUrl: string;
let gw: GatewayProcess;

function config(): string {
  const f = fakes;
  return `
server:
  max_body_mb: 1
# These tests fail the same backends again and again to watch the failover order: no ejection.
backend_health:
  consecutive_failures: 0
services:
  - type: echo
    model: echo-model
    backend_model: echo-backend
    operations: { run: [/v1/echo, /v1/echo/*] }
    inference_url: ${f.echo.url}/base/
    inference_headers:
      authorization: "Bearer \${SYNC_TEST_KEY}"
      x-injected: "yes"
  - type: shared
    model: alpha
    operations: { run: [/v1/shared] }
    inference_url: ${f.echo.url}/alpha
  - type: shared
    model: beta
    operations: { run: [/v1/shared] }
    inference_url: ${f.echo.url}/beta
  - type: infer
    model: tmpl-model
    backend_model: tmpl-model
    operations: { infer: ["/v2/models/{model}/infer"] }
    inference_url: ${f.echo.url}/kserve
  - type: multi
    model: multi-model
    backend_model: service-level
    operations: { run: [/v1/multi] }
    inference_headers: { x-level: service, authorization: Bearer service }
    backends:
      - { url: "${f.echo2.url}", model: per-backend, headers: { authorization: Bearer backend } }
  - type: failover
    model: dead-first
    operations: { run: [/v1/dead-first] }
    backends:
      - { url: "${deadUrl}", weight: 5 }
      - { url: "${f.f1.url}", weight: 0 }
      - { url: "${f.fallback.url}", weight: 0 }
  - type: failover
    model: by-weight
    operations: { run: [/v1/by-weight] }
    backends:
      - { url: "${f.f1.url}", weight: 1 }
      - { url: "${f.f2.url}", weight: 2 }
      - { url: "${f.f3.url}", weight: 3 }
      - { url: "${deadUrl}", weight: 0 }
      - { url: "${f.fallback.url}", weight: 0 }
  - type: fourxx
    model: fourxx-model
    operations: { run: [/v1/fourxx] }
    backends:
      - { url: "${f.fourxx.url}", weight: 1 }
      - { url: "${f.fallback.url}", weight: 0 }
  - type: weights
    model: weighted
    operations: { run: [/v1/weights] }
    backends:
      - { url: "${f.heavy.url}", weight: 3 }
      - { url: "${f.light.url}", weight: 1 }
  - type: stream
    model: streamer
    operations: { run: [/v1/stream] }
    inference_url: ${f.sse.url}
  - type: audio
    model: whisper
    operations: { transcribe: [/v1/audio/transcriptions] }
    inference_url: ${f.count.url}
  - type: audio-failover
    model: upload-failover
    operations: { transcribe: [/v1/upload-failover] }
    backends:
      - { url: "${deadUrl}", weight: 1 }
      - { url: "${f.count.url}", weight: 0 }
  - type: hang
    model: hanger
    operations: { run: [/v1/hang] }
    inference_url: ${f.hang.url}
  - type: down
    model: down-model
    operations: { run: [/v1/down] }
    inference_url: ${deadUrl}
  - type: chat
    model: chat-model
    provider: chat_completions
    deprecated: true
    operations: { chat: [/v1/chat/completions] }
    inference_url: ${f.echo.url}
  - type: batch
    model: batch-model
    inference_url: ${f.echo.url}
  - type: nameless
    operations: { run: [/v1/nameless] }
    inference_url: ${f.echo.url}
`;
}

beforeAll(async () => {
  const initial: Partial<Record<Name, Behaviour>> = {
    f1: { kind: "status", status: 503 },
    f2: { kind: "status", status: 503 },
    f3: { kind: "status", status: 503 },
    count: { kind: "count" },
    hang: { kind: "hang" },
  };
  fakes = Object.fromEntries(await Promise.all(names.map(async (name) => [name, await startBackend(initial[name])] as const))) as Record<Name, FakeBackend>;
  deadUrl = `http://127.0.0.1:${await freePort()}`;
  gw = await startGateway(config(), { env: { SYNC_TEST_KEY: "secret-from-env" } });
});

afterAll(async () => {
  await gw?.kill();
  await Promise.all(Object.values(fakes ?? {}).map((f) => f.close()));
});

beforeEach(() => {
  for (const fake of Object.values(fakes)) fake.reset();
});

function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function echoOf(response: Response): Promise<Echo> {
  expect(response.status).toBe(200);
  return (await response.json()) as Echo;
}

/** The error body of `response`: exactly `message`, `type` and `code`, the code the one expected. */
async function errorOf(response: Response, status: number, code: string): Promise<ErrorBody["error"]> {
  const body = (await response.json()) as ErrorBody & { error: { code: string } };
  expect(response.status, JSON.stringify(body)).toBe(status);
  expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "type"]);
  expect(body.error.code).toBe(code);
  return body.error;
}

/** Reads the stream until `text` holds `until`, failing at the deadline instead of hanging. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, until: string, timeoutMs = 5000): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (!text.includes(until)) {
    const left = deadline - Date.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`"${until}" not received within ${timeoutMs} ms; got ${JSON.stringify(text)}`)), Math.max(left, 0));
    });
    try {
      const { done, value } = await Promise.race([reader.read(), timeout]);
      if (done) break;
      text += decoder.decode(value, { stream: true });
    } finally {
      clearTimeout(timer);
    }
  }
  return text;
}

function bySeq(...fakesToRead: FakeBackend[]): Array<{ fake: FakeBackend; request: RecordedRequest }> {
  return fakesToRead.flatMap((fake) => fake.requests.map((request) => ({ fake, request }))).sort((a, b) => a.request.seq - b.request.seq);
}

describe("direct proxy", () => {
  it("forwards to the backend base + original path + query string, with model rewritten to backend_model", async () => {
    const body = { model: "echo-model", input: "hi", nested: { keep: [1, 2] } };
    const echo = await echoOf(await post("/v1/echo/sub/path?a=1&b=two%20words", body));
    expect(echo.method).toBe("POST");
    expect(echo.path).toBe("/base/v1/echo/sub/path");
    expect(echo.query).toBe("?a=1&b=two%20words");
    expect(JSON.parse(echo.body)).toEqual({ ...body, model: "echo-backend" });
    // The body changed, so its length was recomputed.
    expect(Number(echo.headers["content-length"])).toBe(Buffer.byteLength(echo.body));
    expect(echo.headers["content-type"]).toBe("application/json");
  });

  it("writes no runtime warning for an answered request (Deno: a request's signal aborts only when the client goes away)", async () => {
    const echo = await echoOf(await post("/v1/echo/warning-check", { model: "echo-model" }));
    expect(echo.path).toBe("/base/v1/echo/warning-check");
    // Deno 2's default also aborts the signal after every successful response, and says so once
    // on stderr; `deno task start` (and this suite) opt out with --unstable-no-legacy-abort.
    expect(gw.output()).not.toMatch(/request\.signal aborts on successful responses/);
  });

  it("takes the model from a {model} path segment and leaves a body without model alone", async () => {
    const text = '{"inputs": [ {"name": "x"} ]}';
    const echo = await echoOf(await post("/v2/models/tmpl-model/infer", text));
    expect(echo.path).toBe("/kserve/v2/models/tmpl-model/infer");
    expect(echo.body).toBe(text);
  });

  it("uses a backend's own model and headers over the service-level ones", async () => {
    const echo = await echoOf(await post("/v1/multi", { model: "multi-model" }, { authorization: "Bearer client" }));
    expect(JSON.parse(echo.body)).toEqual({ model: "per-backend" });
    expect(echo.headers.authorization).toBe("Bearer backend");
    expect(echo.headers["x-level"]).toBe("service");
  });

  it("lets inference_headers (env-expanded) override client headers and drops hop-by-hop headers", async () => {
    const body = JSON.stringify({ model: "echo-model" });
    const response = await rawRequest(
      gw.port,
      `POST /v1/echo HTTP/1.1
       Host: 127.0.0.1:${gw.port}
       Content-Type: application/json
       Authorization: Bearer client-token
       X-Injected: from-client
       Connection: x-custom, close
       X-Custom: listed-in-connection
       Keep-Alive: timeout=5
       TE: trailers
       Trailer: x-checksum
       Proxy-Authorization: Basic c2VjcmV0
       Expect: 100-continue
       X-Keep: kept`,
      body,
    );
    expect(response.status).toBe(200);
    const [received] = fakes.echo.requests;
    expect(received.headers.authorization).toBe("Bearer secret-from-env");
    expect(received.headers["x-injected"]).toBe("yes");
    expect(received.headers["x-keep"]).toBe("kept");
    for (const name of ["x-custom", "keep-alive", "te", "trailer", "proxy-authorization", "expect"]) {
      expect(received.headers[name], name).toBeUndefined();
    }
    expect(received.headers.connection ?? "").not.toContain("x-custom");
  });

  it("streams server-sent events: the first event reaches the client while the backend holds the rest", async () => {
    fakes.sse.behave({ kind: "sse", events: 3, holdAfter: 1 });
    const response = await post("/v1/stream", { stream: true });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = response.body!.getReader();
    const first = await readUntil(reader, '{"n":1}');
    // The fake sends events 2 and 3 only after release(): event 1 was not held back by the gateway.
    expect(first).not.toContain('{"n":2}');
    expect(fakes.sse.requests[0].aborted).toBe(false);
    fakes.sse.release();
    const rest = await readUntil(reader, '{"n":3}');
    expect(first + rest).toBe('data: {"n":1}\n\ndata: {"n":2}\n\ndata: {"n":3}\n\n');
    expect((await reader.read()).done).toBe(true);
  });

  // 200 MB through two hops: a bound for a loaded machine (Deno took over 60 s there), not a timing.
  it("streams a 50 MB multipart upload through without holding it in memory", { timeout: 180_000 }, async () => {
    const upload = async (bytes: number) => {
      const body = multipartUpload(bytes, { model: "whisper" });
      const response = await fetch(`${gw.url}/v1/audio/transcriptions`, {
        method: "POST",
        headers: { "content-type": body.contentType },
        body: body.stream,
        duplex: "half",
      } as RequestInit);
      expect(response.status).toBe(200);
      // The backend got every byte, as multipart with the client's boundary.
      expect(await response.json()).toEqual({ bytes: body.totalBytes, content_type: body.contentType });
    };
    // Warm-up: the first upload loads the code paths every later one reuses.
    await upload(2 * MIB);

    const watch = watchRss(gw.child.pid);
    const peaks: number[] = [];
    try {
      await upload(50 * 1000 * 1000);
      if (watch) peaks.push(watch.peak());
      // A collector may leave tens of MB of spent chunks uncollected (V8 waits for ~64 MB
      // of external memory), so a 50 MB upload alone cannot tell streaming from buffering:
      // with the body held whole it measured 61 MB on Node. 150 MB more can.
      await upload(150 * 1000 * 1000);
      if (watch) peaks.push(watch.peak());
    } finally {
      await watch?.stop();
    }
    if (watch) {
      const growth = peaks.map((p) => p - watch.before);
      console.log(
        `gateway RSS (${onDeno ? "deno" : "node"}): before ${(watch.before / MIB).toFixed(1)} MiB; peak growth during 50 MB upload ${
          (growth[0] / MIB).toFixed(1)
        } MiB, after 150 MB more ${(growth[1] / MIB).toFixed(1)} MiB`,
      );
      // The 50 MB figure is printed, not bounded: held whole that body measured 61 MiB on Node,
      // inside what streaming reaches while chunks await collection (28 to 66 MiB in five
      // clean-clone runs of 2026-11-30), so no bound on it tells the two apart; 64 MiB flaked.
      // Held whole, the second body alone would add 143 MiB; the allocator's own growth
      // while it settles stays well below (measured: Node 28 to 66, Deno 53 to 85 MiB).
      expect(growth[1]).toBeLessThan(100 * MIB);
    }
  });

  it("fails a streamed upload over to the next backend when the first refuses the connection", async () => {
    const upload = multipartUpload(3 * MIB, { model: "upload-failover" });
    const response = await fetch(`${gw.url}/v1/upload-failover`, {
      method: "POST",
      headers: { "content-type": upload.contentType },
      body: upload.stream,
      duplex: "half",
    } as RequestInit);
    expect(await response.json()).toEqual({ bytes: upload.totalBytes, content_type: upload.contentType });
  });

  it("aborts the backend request when the client disconnects before the answer", async () => {
    const client = new AbortController();
    const request = fetch(`${gw.url}/v1/hang`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", signal: client.signal });
    const settled = request.catch((error: unknown) => error);
    await waitUntil(() => fakes.hang.requests.length === 1, 5000, () => "the backend never got the request");
    client.abort();
    expect(await settled).toBeInstanceOf(Error);
    await waitUntil(() => fakes.hang.requests.some((r) => r.aborted), 5000, () => "the backend request was not aborted");
    // Counted as the client's doing (499), and not logged as a backend failing over.
    const clientClosed = /svc_gateway_requests_total\{status="499",mode="sync",service_type="hang"\} 1/;
    let metrics = "";
    await waitUntil(
      async () => clientClosed.test(metrics = await (await fetch(`${gw.url}/metrics`)).text()),
      5000,
      () => `no 499 counted:\n${metrics.split("\n").filter((l) => l.startsWith("svc_gateway_requests_total")).join("\n")}`,
    );
    expect(gw.output()).not.toMatch(/"event":"backend_failover".*"model":"hanger"/);
  });

  it("aborts the backend stream when the client disconnects mid-stream", async () => {
    fakes.sse.behave({ kind: "sse", events: 3, holdAfter: 1 });
    const client = new AbortController();
    const response = await fetch(`${gw.url}/v1/stream`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", signal: client.signal });
    const reader = response.body!.getReader();
    await readUntil(reader, '{"n":1}');
    client.abort();
    await waitUntil(() => fakes.sse.requests[0]?.aborted === true, 5000, () => "the backend stream was not aborted");
  });
});

describe("backend selection and failover", () => {
  it("tries a dead port, then a 503 backend, then the fallback that answers", async () => {
    const echo = await echoOf(await post("/v1/dead-first", { model: "dead-first" }));
    expect(echo.path).toBe("/v1/dead-first");
    const order = bySeq(fakes.f1, fakes.fallback).map((hit) => hit.fake);
    expect(order).toEqual([fakes.f1, fakes.fallback]);
  });

  it("after the weighted pick, tries the remaining weight > 0 backends by descending weight, then weight 0 ones in order", async () => {
    const weightOf = new Map([
      [fakes.f1, 1],
      [fakes.f2, 2],
      [fakes.f3, 3],
    ]);
    const firstPicks = new Set<FakeBackend>();
    for (let i = 0; i < 12; i++) {
      for (const fake of [fakes.f1, fakes.f2, fakes.f3, fakes.fallback]) fake.requests.length = 0;
      expect((await post("/v1/by-weight", {})).status).toBe(200);
      const order = bySeq(fakes.f1, fakes.f2, fakes.f3, fakes.fallback).map((hit) => hit.fake);
      expect(order).toHaveLength(4);
      const [first, ...rest] = order;
      firstPicks.add(first);
      expect(rest.slice(0, 2).map((fake) => weightOf.get(fake))).toEqual(
        [...weightOf.entries()].filter(([fake]) => fake !== first).map(([, w]) => w).sort((a, b) => b - a),
      );
      // The dead weight-0 backend comes before the fallback and leaves no trace; the fallback answers last.
      expect(rest[2]).toBe(fakes.fallback);
    }
    expect(firstPicks.has(fakes.fallback)).toBe(false);
  });

  it("returns the last backend's 5xx when every backend fails", async () => {
    fakes.fallback.behave({ kind: "status", status: 500, body: '{"native":"last"}' });
    const response = await post("/v1/by-weight", {});
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ native: "last" });
  });

  it("does not retry a 4xx", async () => {
    fakes.fourxx.behave({ kind: "status", status: 401, body: '{"error":"bad key"}' });
    const response = await post("/v1/fourxx", {});
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: "bad key" });
    expect(fakes.fourxx.requests).toHaveLength(1);
    expect(fakes.fallback.requests).toHaveLength(0);
  });

  it("honours the weights: 3:1 gives the heavy backend about 75% of requests", async () => {
    // The pick is random. Over 400 requests the heavy share's standard deviation was 0.022, so
    // +-0.07 was 3.2 of them and failed by chance (0.6775 once); over 1,000 it is 0.0137, and
    // +-0.07 is 5.1 of them: about once in three million runs.
    const total = 1000;
    let next = 0;
    const worker = async () => {
      while (next < total) {
        next++;
        const response = await post("/v1/weights", {});
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(fakes.heavy.requests.length + fakes.light.requests.length).toBe(total);
    const share = fakes.heavy.requests.length / total;
    expect(share).toBeGreaterThan(0.75 - 0.07);
    expect(share).toBeLessThan(0.75 + 0.07);
  });
});

describe("bad input and failures", () => {
  it("accepts a JSON body of exactly max_body_mb and refuses one byte more with 413", async () => {
    const frame = JSON.stringify({ model: "echo-model", pad: "" });
    const atCap = JSON.stringify({ model: "echo-model", pad: "x".repeat(MIB - frame.length) });
    expect(atCap.length).toBe(MIB);
    expect((await post("/v1/echo", atCap)).status).toBe(200);

    const over = JSON.stringify({ model: "echo-model", pad: "x".repeat(MIB - frame.length + 1) });
    const error = await errorOf(await post("/v1/echo", over), 413, "payload_too_large");
    expect(error.type).toBe("request_too_large");
    expect(error.message).toContain("server.max_body_mb");
    // Only the body at the cap reached the backend.
    expect(fakes.echo.requests).toHaveLength(1);
  });

  it("counts the bytes of a JSON body sent without content-length", async () => {
    const chunk = new TextEncoder().encode(" ".repeat(64 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode('{"model":"echo-model","pad":"'));
        if (sent >= 2 * MIB) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk.slice());
      },
    });
    const response = await fetch(`${gw.url}/v1/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duplex: "half",
    } as RequestInit);
    expect((await errorOf(response, 413, "payload_too_large")).type).toBe("request_too_large");
  });

  it("answers invalid JSON with 400 saying where it broke", async () => {
    const error = await errorOf(await post("/v1/echo", '{\n  "model": "echo-model",\n  "x": [1, 2,,]\n}'), 400, "invalid_request");
    expect(error.type).toBe("invalid_request_error");
    expect(error.message).toBe('the request body is not valid JSON: expected a value, found "," at line 3, column 14 (character 40)');
    expect(fakes.echo.requests).toHaveLength(0);
  });

  it("answers an unknown path with 404", async () => {
    const error = await errorOf(await post("/v1/nowhere", { model: "echo-model" }), 404, "no_route");
    expect(error).toEqual({ message: "no route for POST /v1/nowhere", type: "not_found_error", code: "no_route" });
  });

  it("answers an unknown model with 404 listing the models of that path", async () => {
    const error = await errorOf(await post("/v1/shared", { model: "gamma" }), 404, "model_not_found");
    expect(error.type).toBe("not_found_error");
    expect(error.message).toContain('"gamma"');
    expect(error.message).toContain("alpha, beta");
  });

  it("answers a path with several models and none chosen with 400 listing them", async () => {
    const error = await errorOf(await post("/v1/shared", { input: 1 }), 400, "model_required");
    expect(error.type).toBe("invalid_request_error");
    expect(error.message).toContain("alpha, beta");
    // The chosen one is served.
    expect((await echoOf(await post("/v1/shared", { model: "beta" }))).path).toBe("/beta/v1/shared");
  });

  it("answers 502 naming the backend when it is unreachable", async () => {
    const error = await errorOf(await post("/v1/down", {}), 502, "backend_error");
    expect(error.type).toBe("backend_error");
    expect(error.message).toContain(deadUrl);
    expect(error.message).toContain("down-model");
  });
});

describe("slow backend", () => {
  let slow: GatewayProcess;
  beforeAll(async () => {
    slow = await startGateway(`
server:
  backend_timeout: 300ms
services:
  - type: slow
    model: slow-model
    operations: { run: [/v1/slow] }
    inference_url: ${fakes.hang.url}
`);
  });
  afterAll(async () => {
    await slow?.kill();
  });

  it("answers 504 when the backend sends no headers within server.backend_timeout, and aborts it", async () => {
    const started = Date.now();
    const response = await fetch(`${slow.url}/v1/slow`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    const error = await errorOf(response, 504, "backend_timeout");
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(error.type).toBe("timeout_error");
    expect(error.message).toContain(fakes.hang.url);
    expect(error.message).toContain("server.backend_timeout");
    await waitUntil(() => fakes.hang.requests[0]?.aborted === true, 5000, () => "the timed-out backend request was not aborted");
  });
});

describe("GET /v1/models", () => {
  it("lists every service with a model alias (docs/design.md#model-list)", async () => {
    const response = await fetch(`${gw.url}/v1/models`);
    expect(response.status).toBe(200);
    const list = (await response.json()) as { object: string; data: Array<Record<string, unknown>> };
    expect(list.object).toBe("list");
    const ids = list.data.map((entry) => entry.id);
    expect(ids).not.toContain("");
    expect(ids).toContain("batch-model");
    expect(list.data).toHaveLength(16);
    const byId = new Map(list.data.map((entry) => [entry.id, entry]));
    expect(byId.get("echo-model")).toEqual({
      id: "echo-model",
      object: "model",
      owned_by: "gateway",
      service_type: "echo",
      backend_model: "echo-backend",
      capabilities: { supports_sync: true, supports_streaming: false, deprecated: false },
    });
    expect(byId.get("chat-model")).toEqual({
      id: "chat-model",
      object: "model",
      owned_by: "gateway",
      service_type: "chat",
      provider: "chat_completions",
      capabilities: { supports_sync: true, supports_streaming: true, deprecated: true },
    });
    // Per-backend models are never shown; the service-level one is.
    expect(byId.get("multi-model")?.backend_model).toBe("service-level");
    // backend_model equal to the alias rewrites nothing.
    expect(byId.get("tmpl-model")).not.toHaveProperty("backend_model");
    expect(byId.get("batch-model")?.capabilities).toEqual({ supports_sync: false, supports_streaming: false, deprecated: false });
  });

  it("proxies ?model= to the model's backend /v1/models/<backend model> and returns its answer", async () => {
    const echo = await echoOf(await fetch(`${gw.url}/v1/models?model=echo-model`, { headers: { authorization: "Bearer client" } }));
    expect(echo.method).toBe("GET");
    expect(echo.path).toBe("/base/v1/models/echo-backend");
    expect(echo.headers.authorization).toBe("Bearer secret-from-env");

    fakes.echo.behave({ kind: "status", status: 200, body: '{"id":"alpha","native":true}' });
    const native = await fetch(`${gw.url}/v1/models?model=alpha`);
    expect(await native.json()).toEqual({ id: "alpha", native: true });
    expect(fakes.echo.requests.at(-1)?.path).toBe("/alpha/v1/models/alpha");
  });

  it("answers ?model= for an unknown model with 404", async () => {
    const error = await errorOf(await fetch(`${gw.url}/v1/models?model=nope`), 404, "model_not_found");
    expect(error.type).toBe("not_found_error");
    expect(error.message).toContain('"nope"');
  });
});

describe("request counter", () => {
  const series = (text: string, status: number, serviceType: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`svc_gateway_requests_total{status="${status}",mode="sync",service_type="${serviceType}"}`));
    return line ? Number(line.split(" ").at(-1)) : 0;
  };

  it("counts sync requests by status, mode and service type", async () => {
    const before = await (await fetch(`${gw.url}/metrics`)).text();
    for (let i = 0; i < 3; i++) await (await post("/v1/echo", { model: "echo-model" })).arrayBuffer();
    await (await post("/v1/shared", { model: "gamma" })).arrayBuffer();
    await (await post("/v1/down", {})).arrayBuffer();
    const after = await (await fetch(`${gw.url}/metrics`)).text();
    expect(series(after, 200, "echo") - series(before, 200, "echo")).toBe(3);
    // An unknown model never resolved a service type.
    expect(series(after, 404, "") - series(before, 404, "")).toBe(1);
    expect(series(after, 502, "down") - series(before, 502, "down")).toBe(1);
  });
});
