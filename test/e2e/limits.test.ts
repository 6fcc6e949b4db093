/**
 * Limits as a user meets them (docs/design.md#sync-concurrency-cap, docs/design.md#errors and
 * docs/design.md#limits): real gateway processes (Node, or Deno when the suite runs on Deno) on the
 * suite's redis-server, database 6 (flushed when the file starts), in front of fake backends from
 * test/fixtures. Consumers are unique per test so tests never share a window. No sleeps: every wait
 * polls with a deadline.
 */
import { mkdtempSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type HeldBackend, startHeldBackend } from "../fixtures/held-backend.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { CHAT_USAGE, type FakeBackend, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";
import { type RunningServer, startRedis } from "../support/servers.ts";

const DB = 6;
const TOKENS = CHAT_USAGE.prompt_tokens + CHAT_USAGE.completion_tokens;

type Json = Record<string, unknown>;
interface ErrorBody {
  error: { message: string; type: string };
}
interface UsageView {
  usage: Array<{ service_type: string; total: Json; window?: { requests?: number; tokens?: number; processing_time_seconds?: number; reset_at: string } }>;
}

async function withRedis<T>(fn: (client: ReturnType<typeof createClient>) => Promise<T>, url = inject("redisUrl"), database = DB): Promise<T> {
  const client = createClient({ url, database });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

const running: GatewayProcess[] = [];
async function start(yaml: string): Promise<GatewayProcess> {
  const gw = await startGateway(yaml);
  running.push(gw);
  return gw;
}

let held: HeldBackend;
let inference: InferenceBackend;
let llm: FakeBackend;

beforeAll(async () => {
  await withRedis((client) => client.flushDb());
  [held, inference, llm] = await Promise.all([startHeldBackend(), startInferenceBackend(), startLlmBackend()]);
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((gw) => gw.kill()));
  await Promise.all([held.close(), inference.close(), llm.stop()]);
});

const identity = (consumer?: string, userType?: string, priority = false): Record<string, string> => ({
  ...(consumer ? { "x-consumer": consumer } : {}),
  ...(userType ? { "x-user-type": userType } : {}),
  ...(priority ? { "x-priority": "1" } : {}),
});

/**
 * Each request on a connection of its own: with `server.workers: 2` connections, not requests,
 * are spread over the workers, so one kept-alive connection would meet one worker only.
 */
const SPREAD = { connection: "close" };

function echo(gw: GatewayProcess, headers: Record<string, string> = {}, path = "/v1/echo"): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: "POST", headers: { ...SPREAD, "content-type": "application/json", ...headers }, body: "{}" });
}

/** Sends `n` requests one after the other; the statuses (bodies read, so every slot is given back). */
async function statuses(n: number, send: () => Promise<Response>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const response = await send();
    await response.arrayBuffer();
    out.push(response.status);
  }
  return out;
}

function chat(gw: GatewayProcess, model: string, headers: Record<string, string>, extra: Json = {}): Promise<Response> {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { ...SPREAD, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], ...extra }),
  });
}

function submit(gw: GatewayProcess, headers: Record<string, string>): Promise<Response> {
  const form = new FormData();
  form.append("file", new Blob(["audio"], { type: "audio/wav" }), "a.wav");
  return fetch(`${gw.url}/jobs/transcription`, { method: "POST", body: form, headers: { ...SPREAD, ...headers } });
}

async function usageOf(gw: GatewayProcess, consumer: string): Promise<UsageView> {
  const response = await fetch(`${gw.url}/usage`, { headers: { ...SPREAD, ...identity(consumer) } });
  expect(response.status).toBe(200);
  return (await response.json()) as UsageView;
}

async function windowTokens(gw: GatewayProcess, consumer: string): Promise<number | undefined> {
  return (await usageOf(gw, consumer)).usage.find((u) => u.service_type === "chat")?.window?.tokens;
}

function expectRetryAfter(response: Response, atMost: number): void {
  const value = Number(response.headers.get("retry-after"));
  expect(value).toBeGreaterThanOrEqual(1);
  expect(value).toBeLessThanOrEqual(atMost);
}

const metrics = async (gw: GatewayProcess) => await (await fetch(`${gw.url}/metrics`, { headers: SPREAD })).text();

function mainConfig(workers = 1): string {
  return `
server:
  workers: ${workers}
  consumer_header: X-Consumer
  user_type_header: X-User-Type
  priority_header: X-Priority
redis:
  addr: ${JSON.stringify(inject("redisUrl"))}
  db: ${DB}
object_store:
  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "gw-limits-objects-")))}
relay:
  embedded: true
rate_limits:
  echo:
    "*": { rate: 2, period: 1m }
    premium: { rate: 4, period: 1m }
    free: { rate: 0, period: 1m }
  transcription:
    "*": { rate: 2, period: 1m }
    batch: { max_concurrent: 2 }
    metered: { processing_time: 1, processing_period: 1h }
  chat:
    "*": { token_rate: 30, token_period: 1m }
    team: { token_rate: 100, token_period: 1m }
services:
  - type: echo
    model: echo
    inference_url: ${held.url}
    operations: { run: [/v1/echo] }
  - type: transcription
    model: whisper
    inference_url: ${inference.url}
    operations: { transcribe: [/transcribe] }
  - type: chat
    model: gpt-small
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
    token_limits:
      "*": { token_rate: 20, token_period: 1m }
  - type: chat
    model: gpt-big
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
`;
}

// Again with two worker processes (server.workers: 2): every window, budget and job slot is
// the store's, so the answers are the same whichever worker takes each request.
describe.each([1, 2])("limits on one gateway (server.workers: %i)", (workers) => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    await withRedis((client) => client.flushDb());
    gw = await start(mainConfig(workers));
    await waitUntil(async () => metricValue(await metrics(gw), "svc_workers", {}) === workers, 20_000, () => gw.output());
  });
  // Its relay would take the next block's jobs, whose files are in another directory.
  afterAll(async () => {
    await gw.kill();
  });

  describe("request rate (docs/design.md#request-rate)", () => {
    it('measures each user type by its own entry, the rest by "*"; anonymous callers and rate 0 are never limited', async () => {
      // No user type, and a user type without an entry: the "*" entry (2 per minute).
      expect(await statuses(3, () => echo(gw, identity("rate-a")))).toEqual([200, 200, 429]);
      expect(await statuses(3, () => echo(gw, identity("rate-c", "student")))).toEqual([200, 200, 429]);
      // A user type with its own entry (4 per minute).
      expect(await statuses(5, () => echo(gw, identity("rate-b", "premium")))).toEqual([200, 200, 200, 200, 429]);
      // rate: 0 is unlimited and never touches a counter; no consumer header bypasses every limit.
      expect(await statuses(6, () => echo(gw, identity("rate-d", "free")))).toEqual([200, 200, 200, 200, 200, 200]);
      expect(await statuses(6, () => echo(gw, {}))).toEqual([200, 200, 200, 200, 200, 200]);
      const keys = await withRedis((client) => client.keys("rl:*"));
      expect(keys.sort()).toEqual(["rl:echo:rate-a", "rl:echo:rate-b", "rl:echo:rate-c"]);

      const refused = await echo(gw, identity("rate-a"));
      expect(refused.status).toBe(429);
      expectRetryAfter(refused, 60);
      const body = (await refused.json()) as ErrorBody;
      expect(body.error.type).toBe("rate_limit_error");
      expect(body.error.message).toContain('request rate limit reached for service type "echo": 2 requests per 1m');

      const text = await metrics(gw);
      expect(metricValue(text, "svc_ratelimit_requests_total", { service_type: "echo", user_type: "*", result: "allowed" })).toBe(4);
      expect(metricValue(text, "svc_ratelimit_requests_total", { service_type: "echo", user_type: "*", result: "rejected" })).toBe(3);
      expect(metricValue(text, "svc_ratelimit_requests_total", { service_type: "echo", user_type: "premium", result: "rejected" })).toBe(1);
      // Counted once per consumer and window: the first rejection only.
      expect(metricValue(text, "svc_ratelimit_consumer_hits_total", { service_type: "echo", user_type: "*" })).toBe(2);
      expect(metricValue(text, "svc_ratelimit_consumer_hits_total", { service_type: "echo", user_type: "premium" })).toBe(1);
    });

    it("shows the live request window with reset_at in GET /usage", async () => {
      const before = Date.now();
      expect(await statuses(2, () => echo(gw, identity("rate-w")))).toEqual([200, 200]);
      await waitUntil(async () => (await usageOf(gw, "rate-w")).usage.length === 1, 10_000, () => "usage of rate-w never recorded");
      const [entry] = (await usageOf(gw, "rate-w")).usage;
      expect(entry.service_type).toBe("echo");
      expect(entry.window?.requests).toBe(2);
      const resetAt = Date.parse(entry.window?.reset_at ?? "");
      expect(resetAt).toBeGreaterThan(before);
      expect(resetAt).toBeLessThanOrEqual(Date.now() + 60_000);
      // Only the request window is live: no tokens or processing time were measured.
      expect(Object.keys(entry.window ?? {}).sort()).toEqual(["requests", "reset_at"]);
    });

    it("refuses an async submission over the rate before reading its body", async () => {
      expect((await submit(gw, identity("rate-async"))).status).toBe(202);
      expect((await submit(gw, identity("rate-async"))).status).toBe(202);
      // A 50 MB upload of which only the first bytes are ever sent: the answer cannot wait for the body.
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(gw.port, "127.0.0.1");
        let text = "";
        const deadline = setTimeout(() => {
          socket.destroy();
          reject(new Error(`no answer without the body; got: ${text}`));
        }, 10_000);
        socket.setEncoding("utf8");
        socket.on("data", (chunk: string) => {
          text += chunk;
          if (/\r\n\r\n/.test(text)) {
            clearTimeout(deadline);
            socket.destroy();
            resolve(text);
          }
        });
        socket.on("error", reject);
        socket.on("connect", () => {
          socket.write(
            "POST /jobs/transcription HTTP/1.1\r\nHost: gateway\r\nX-Consumer: rate-async\r\n" +
              "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 52428800\r\n\r\n--b\r\n",
          );
        });
      });
      expect(answer).toMatch(/^HTTP\/1\.1 429/);
      expect(answer.toLowerCase()).toContain("retry-after:");
    });
  });

  describe("token budget (docs/design.md#token-budget)", () => {
    it("counts tokens after the response: the request that crosses the budget passes, the next one gets 429", async () => {
      const who = identity("tok-a");
      expect((await chat(gw, "gpt-big", who)).status).toBe(200);
      await waitUntil(async () => (await windowTokens(gw, "tok-a")) === TOKENS, 10_000, () => "tokens of the first answer never counted");
      // 18 of 30 used: under the budget, so this one passes and crosses it (36).
      expect((await chat(gw, "gpt-big", who)).status).toBe(200);
      await waitUntil(async () => (await windowTokens(gw, "tok-a")) === 2 * TOKENS, 10_000, () => "tokens of the crossing answer never counted");
      const refused = await chat(gw, "gpt-big", who);
      expect(refused.status).toBe(429);
      expectRetryAfter(refused, 60);
      const body = (await refused.json()) as ErrorBody;
      expect(body).toEqual({
        error: {
          message: expect.stringContaining(`token budget of service type "chat" used up: ${2 * TOKENS} of 30 tokens per 1m`),
          type: "rate_limit_error",
          code: "budget_exceeded",
        },
      });
      const text = await metrics(gw);
      expect(metricValue(text, "svc_token_ratelimit_checked_total", { service_type: "chat", user_type: "*", result: "allowed" })).toBeGreaterThanOrEqual(2);
      expect(metricValue(text, "svc_token_ratelimit_checked_total", { service_type: "chat", user_type: "*", result: "rejected" })).toBeGreaterThanOrEqual(1);
    });

    it("checks the model's token_limits first; both budgets must pass", async () => {
      // User type "team": 100 tokens for the type, but gpt-small allows 20 ("*" of its token_limits).
      const who = identity("tok-b", "team");
      expect((await chat(gw, "gpt-small", who)).status).toBe(200);
      await waitUntil(async () => (await windowTokens(gw, "tok-b")) === TOKENS, 10_000, () => "tokens never counted");
      expect((await chat(gw, "gpt-small", who)).status).toBe(200);
      await waitUntil(async () => (await windowTokens(gw, "tok-b")) === 2 * TOKENS, 10_000, () => "tokens never counted");
      const refused = await chat(gw, "gpt-small", who);
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as ErrorBody).error.message).toContain('token budget of model "gpt-small" used up: 36 of 20 tokens');
      // Another model of the type is measured by the type's budget only (36 of 100).
      expect((await chat(gw, "gpt-big", who)).status).toBe(200);
    });

    it("does not count streamed answers or Cache-Control: no-cache requests", async () => {
      const who = identity("tok-c");
      const streamed = await chat(gw, "gpt-big", who, { stream: true });
      expect(streamed.status).toBe(200);
      await streamed.text();
      const uncached = await chat(gw, "gpt-big", { ...who, "cache-control": "no-cache" });
      expect(uncached.status).toBe(200);
      await uncached.text();
      expect((await chat(gw, "gpt-big", who)).status).toBe(200);
      // Counted in order on one connection: once the last answer shows, the others would have too.
      await waitUntil(async () => (await windowTokens(gw, "tok-c")) !== undefined, 10_000, () => "tokens never counted");
      expect(await windowTokens(gw, "tok-c")).toBe(TOKENS);
    });
  });

  describe("concurrent jobs and processing time (docs/design.md#concurrent-jobs and docs/design.md#processing-time)", () => {
    it("refuses a submission when pending + processing jobs reach max_concurrent, and takes one again once a job ends", async () => {
      const who = identity("conc-a", "batch");
      inference.hold();
      try {
        const first = await submit(gw, who);
        expect(first.status).toBe(202);
        expect(first.headers.get("x-concurrent-limit")).toBe("2");
        expect(first.headers.get("x-concurrent-remaining")).toBe("1");
        const second = await submit(gw, who);
        expect(second.status).toBe(202);
        expect(second.headers.get("x-concurrent-remaining")).toBe("0");
        const refused = await submit(gw, who);
        expect(refused.status).toBe(429);
        expect(refused.headers.get("x-concurrent-limit")).toBe("2");
        expect(refused.headers.get("x-concurrent-remaining")).toBe("0");
        expectRetryAfter(refused, 1);
        expect(((await refused.json()) as ErrorBody).error.message).toContain("concurrent job limit reached");
      } finally {
        inference.release();
      }
      // The jobs run and end; their slots free up.
      await waitUntil(
        async () => (await withRedis((client) => client.zCard("conc:transcription:conc-a"))) === 0,
        15_000,
        () => "the jobs' slots were never released",
      );
      const again = await submit(gw, who);
      expect(again.status).toBe(202);
      expect(again.headers.get("x-concurrent-remaining")).toBe("1");
    });

    it("lets the job that crosses the processing-time budget run, and refuses later submissions until the window resets", async () => {
      const key = "ptime:transcription:ptime-a";
      // 0.999 of the 1 s budget already used in this hour's window.
      await withRedis((client) => client.set(key, "0.999", { PX: 3_600_000 }));
      const who = identity("ptime-a", "metered");
      const crossing = await submit(gw, who);
      expect(crossing.status).toBe(202);
      expect(crossing.headers.get("x-processingtime-limit")).toBe("1");
      expect(crossing.headers.get("x-processingtime-remaining")).toBe("0.001");
      // The relay reports the job's inference seconds: the budget is crossed.
      await waitUntil(async () => Number(await withRedis((client) => client.get(key))) > 1, 15_000, () => "the job's seconds were never added");
      const refused = await submit(gw, who);
      expect(refused.status).toBe(429);
      expect(refused.headers.get("x-processingtime-remaining")).toBe("0");
      const retryAfter = Number(refused.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThan(3_000);
      expect(retryAfter).toBeLessThanOrEqual(3_600);
      expect(((await refused.json()) as ErrorBody).error).toEqual({
        message: expect.stringContaining("processing-time budget used up"),
        type: "rate_limit_error",
        code: "budget_exceeded",
      });
      const window = (await usageOf(gw, "ptime-a")).usage.find((u) => u.service_type === "transcription")?.window;
      expect(window?.processing_time_seconds).toBeGreaterThan(1);
    });
  });
});

describe("sync concurrency cap shared by two replicas (docs/design.md#sync-concurrency-cap)", () => {
  let one: GatewayProcess;
  let two: GatewayProcess;
  beforeAll(async () => {
    const config = `
server:
  consumer_header: X-Consumer
  priority_header: X-Priority
redis:
  addr: ${JSON.stringify(inject("redisUrl"))}
  db: ${DB}
services:
  - type: capped
    model: capped
    inference_url: ${held.url}
    operations: { run: [/v1/capped] }
    max_concurrent_sync: 2
    priority_reserved_sync: 1
`;
    [one, two] = await Promise.all([start(config), start(config)]);
  });

  it("answers 503 at once when the slots a request may use are busy on any replica; priority requests use the reserved slot", async () => {
    held.hold();
    const arrivedBefore = held.arrived;
    let normal: Promise<Response> | undefined;
    let priority: Promise<Response> | undefined;
    try {
      // Replica one takes the only shared slot.
      normal = echo(one, identity("cap-a"), "/v1/capped");
      await waitUntil(() => held.waiting === 1, 10_000, () => "the first request never reached the backend");
      // Replica two sees it: a non-priority request (named or anonymous) finds no shared slot.
      const busy = await echo(two, identity("cap-b"), "/v1/capped");
      expect(busy.status).toBe(503);
      expect(((await busy.json()) as ErrorBody).error.type).toBe("overloaded_error");
      expect((await echo(two, {}, "/v1/capped")).status).toBe(503);
      // A priority request takes the reserved slot, on either replica.
      priority = echo(two, identity("cap-c", undefined, true), "/v1/capped");
      await waitUntil(() => held.waiting === 2, 10_000, () => "the priority request never reached the backend");
      // Both pools are now full, for priority requests too.
      expect((await echo(one, identity("cap-d", undefined, true), "/v1/capped")).status).toBe(503);
      expect(held.arrived - arrivedBefore).toBe(2);
    } finally {
      held.release();
    }
    for (const answered of [await (normal as Promise<Response>), await (priority as Promise<Response>)]) {
      expect(answered.status).toBe(200);
      await answered.arrayBuffer();
    }
    // The answers were sent to the end: both slots come back.
    await waitUntil(
      async () => (await withRedis((client) => client.mGet(["sem:capped:capped:shared", "sem:capped:capped:reserved"]))).every((v) => v === null),
      10_000,
      () => "the slots were never released",
    );
    expect(await statuses(2, () => echo(two, identity("cap-e"), "/v1/capped"))).toEqual([200, 200]);
  });
});

describe("store errors fail open (docs/design.md#failing-open)", () => {
  let redis: RunningServer;
  let gw: GatewayProcess;
  beforeAll(async () => {
    redis = await startRedis();
    gw = await start(`
server:
  consumer_header: X-Consumer
redis:
  addr: ${JSON.stringify(redis.url)}
rate_limits:
  echo:
    "*": { rate: 2, period: 1m }
services:
  - type: echo
    model: echo
    inference_url: ${held.url}
    operations: { run: [/v1/echo] }
    max_concurrent_sync: 1
`);
  });
  afterAll(async () => {
    await redis.stop();
  });

  it("serves requests while Redis is down, and limits again once it is back", async () => {
    expect(await statuses(3, () => echo(gw, identity("open-a")))).toEqual([200, 200, 429]);
    await redis.stop();
    // Rate limit, sync cap and usage recording all fail: the requests are served anyway.
    expect(await statuses(5, () => echo(gw, identity("open-a")))).toEqual([200, 200, 200, 200, 200]);
    const text = await metrics(gw);
    expect(metricValue(text, "svc_ratelimit_errors_total", { service_type: "echo" })).toBeGreaterThanOrEqual(10);

    redis = await startRedis(redis.port);
    await waitUntil(async () => (await fetch(`${gw.url}/health?ready=1`)).status === 200, 20_000, () => "the gateway never reconnected to Redis");
    // A fresh Redis: a fresh window.
    expect(await statuses(3, () => echo(gw, identity("open-a")))).toEqual([200, 200, 429]);
  });
});

describe("hot reload (docs/design.md#hot-reload)", () => {
  it("applies changed rate_limits at once; the running window keeps its count", async () => {
    const config = (rate: number) => `
server:
  consumer_header: X-Consumer
redis:
  addr: ${JSON.stringify(inject("redisUrl"))}
  db: ${DB}
rate_limits:
  echo:
    "*": { rate: ${rate}, period: 1m }
services:
  - type: echo
    model: echo
    inference_url: ${held.url}
    operations: { run: [/v1/echo] }
`;
    const gw = await start(config(1));
    expect(await statuses(2, () => echo(gw, identity("reload-a")))).toEqual([200, 429]);
    gw.writeConfig(config(3));
    expect((await fetch(`${gw.url}/-/reload`, { method: "POST" })).status).toBe(200);
    // Two requests counted so far in this window: the third fits the new rate, the fourth does not.
    expect(await statuses(2, () => echo(gw, identity("reload-a")))).toEqual([200, 429]);
  });
});
