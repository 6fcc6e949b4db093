/**
 * Streamed LLM answers as a user meets them: a real gateway process (Node, and Deno in the Deno
 * subset) in front of fake backends that speak each protocol and cut their streams cleanly,
 * break them, stall, or fail before their first event (test/fixtures/llm-backends.ts).
 *
 * - Every stream ends honestly: one error event and no `[DONE]` when the backend's stream did
 *   not end as its protocol says, `svc_llm_stream_incomplete_total` counts why; a stream that
 *   fails before its first event fails over to the next backend.
 * - Streams are counted (`llm.count_streamed_tokens: true`) into token budgets, usage records
 *   and token metrics, on the memory store and on Redis; with the spec's default they are not.
 */
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { CHAT_USAGE, type FakeBackend, LOCAL_COUNTS, MESSAGES_USAGE, startLlmBackend } from "../fixtures/llm-backends.ts";
import { metricSum } from "../support/prometheus.ts";

type Json = Record<string, unknown>;

const CHAT = "/v1/chat/completions";
const IDLE_MS = 300;

const user = (content: string) => ({ role: "user", content });

function post(gw: GatewayProcess, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gw.url}${CHAT}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    // A stream that never ends fails the test instead of hanging it.
    signal: AbortSignal.timeout(10_000),
  });
}

/** The SSE `data:` payloads of a whole response body. */
function sseData(text: string): string[] {
  return text.split(/\n\n/).flatMap((block) => block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)));
}

/** The sum of a series' samples whose labels include `labels` (test/support/prometheus.ts). */
async function metric(gw: GatewayProcess, name: string, labels: Record<string, string> = {}): Promise<number> {
  return metricSum(await (await fetch(`${gw.url}/metrics`)).text(), name, labels);
}

/** A consumer's total tokens of one service type, from `GET /usage`. */
async function usageTokens(
  gw: GatewayProcess,
  consumer: string,
  serviceType: string,
): Promise<{ requests: number; prompt: number; completion: number } | undefined> {
  const body = (await (await fetch(`${gw.url}/usage`, { headers: { "x-consumer": consumer } })).json()) as { usage?: Json[] };
  const entry = body.usage?.find((u) => u.service_type === serviceType) as
    | { total: { requests: number; tokens?: { prompt: number; completion: number } } }
    | undefined;
  if (!entry) return undefined;
  return { requests: entry.total.requests, prompt: entry.total.tokens?.prompt ?? 0, completion: entry.total.tokens?.completion ?? 0 };
}

const PROVIDERS = [
  { provider: "chat_completions", model: "chat", type: "chat", usage: CHAT_USAGE },
  {
    provider: "messages_api",
    model: "msg",
    type: "msg",
    usage: { prompt_tokens: MESSAGES_USAGE.input_tokens, completion_tokens: MESSAGES_USAGE.output_tokens },
  },
  {
    provider: "local_chat",
    model: "local",
    type: "local",
    usage: { prompt_tokens: LOCAL_COUNTS.prompt_eval_count, completion_tokens: LOCAL_COUNTS.eval_count },
  },
] as const;

function servicesYaml(backend: FakeBackend, failing: FakeBackend): string {
  const lines = PROVIDERS.map(
    (p) =>
      `  - { type: ${p.type}, model: ${p.model}, provider: ${p.provider}, inference_url: ${backend.url}, token_limits: { "*": { token_rate: 10, token_period: 1m } }, operations: { chat: [${CHAT}] } }`,
  );
  lines.push(
    `  - { type: chat, model: failover, provider: chat_completions, backends: [{ url: ${failing.url}, weight: 1 }, { url: ${backend.url}, weight: 0 }], operations: { chat: [${CHAT}] } }`,
  );
  return `services:\n${lines.join("\n")}\n`;
}

const STORES = [
  { store: "memory", yaml: () => "" },
  { store: "redis", yaml: () => `redis:\n  addr: ${JSON.stringify(inject("redisUrl"))}\n  db: 2\n` },
];

describe.each(STORES)("streams on the $store store", ({ store, yaml }) => {
  let backend: FakeBackend;
  let failing: FakeBackend;
  let gw: GatewayProcess;
  const run = `${store}-${Date.now()}`;

  beforeAll(async () => {
    [backend, failing] = await Promise.all([startLlmBackend(), startLlmBackend()]);
    gw = await startGateway(`
server:
  consumer_header: x-consumer
  backend_timeout: 5s
metrics:
  top_consumers: 5
llm:
  count_streamed_tokens: true
  stream_idle_timeout: ${IDLE_MS}ms
${yaml()}${servicesYaml(backend, failing)}`);
  });

  afterAll(async () => {
    await gw?.kill();
    await Promise.all([backend?.stop(), failing?.stop()]);
  });

  describe.each(PROVIDERS)("counted: $provider", ({ model, type, usage }) => {
    it("counts a streamed answer's usage into the usage record, the token metrics and the token budget", async () => {
      const consumer = { "x-consumer": `count-${model}-${run}` };
      const tokensBefore = await metric(gw, "svc_llm_tokens_total", { model });
      const response = await post(gw, { model, stream: true, messages: [user("counted")] }, consumer);
      expect(response.status).toBe(200);
      const data = sseData(await response.text());
      expect(data[data.length - 1]).toBe("[DONE]");
      // The record is written before the client has the whole answer.
      expect(await usageTokens(gw, consumer["x-consumer"], type)).toEqual({ requests: 1, prompt: usage.prompt_tokens, completion: usage.completion_tokens });
      expect(await metric(gw, "svc_llm_tokens_total", { model })).toBe(tokensBefore + usage.prompt_tokens + usage.completion_tokens);
      // The top-consumer gauge is rebuilt from these totals (llm:consumer_tokens, shared by replicas).
      if (store === "redis") {
        const redis = createClient({ url: inject("redisUrl"), database: 2 });
        await redis.connect();
        try {
          const field = (type: string) => JSON.stringify([consumer["x-consumer"], "", type]);
          await waitUntil(async () => (await redis.hGet("llm:consumer_tokens", field("completion"))) === String(usage.completion_tokens));
          expect(await redis.hGet("llm:consumer_tokens", field("prompt"))).toBe(String(usage.prompt_tokens));
        } finally {
          await redis.quit();
        }
      }
      // The budget is 10 tokens a minute: the streamed answer used it up.
      const next = await post(gw, { model, messages: [user("over budget")] }, consumer);
      expect(next.status).toBe(429);
      expect(((await next.json()) as { error: Json }).error).toMatchObject({ type: "rate_limit_error" });
    });
  });

  it("counts a stream without usage as a request without tokens, in svc_llm_stream_usage_missing_total", async () => {
    const consumer = { "x-consumer": `nousage-${run}` };
    const labels = { service_type: "chat", model: "chat" };
    const before = await metric(gw, "svc_llm_stream_usage_missing_total", labels);
    const response = await post(gw, { model: "chat", stream: true, stream_options: { include_usage: false }, messages: [user("no usage")] }, consumer);
    expect(sseData(await response.text()).pop()).toBe("[DONE]");
    expect(await usageTokens(gw, consumer["x-consumer"], "chat")).toEqual({ requests: 1, prompt: 0, completion: 0 });
    expect(await metric(gw, "svc_llm_stream_usage_missing_total", labels)).toBe(before + 1);
    expect((await post(gw, { model: "chat", messages: [user("still within budget")] }, consumer)).status).toBe(200);
  });
});

describe("streams that do not end honestly", () => {
  let backend: FakeBackend;
  let failing: FakeBackend;
  let gw: GatewayProcess;

  beforeAll(async () => {
    [backend, failing] = await Promise.all([startLlmBackend(), startLlmBackend()]);
    gw = await startGateway(`
server:
  backend_timeout: 5s
llm:
  stream_idle_timeout: ${IDLE_MS}ms
${servicesYaml(backend, failing)}`);
  });

  afterAll(async () => {
    await gw?.kill();
    await Promise.all([backend?.stop(), failing?.stop()]);
  });

  /** Streams `marker` and returns the data events the client got. */
  async function streamed(model: string, marker: string): Promise<string[]> {
    const response = await post(gw, { model, stream: true, messages: [user(`${marker} answer`)] });
    expect(response.status).toBe(200);
    return sseData(await response.text());
  }

  describe.each(PROVIDERS)("$provider", ({ model, type }) => {
    it.each(
      [
        ["cut", "no_end", /ended before the end of the answer/],
        ["reset", "reset", /broke off/],
        ["stall", "idle", /fell silent for 300 ms \(llm\.stream_idle_timeout\)/],
      ] as const,
    )("a stream that is %s ends with one error event and no [DONE], counted as %s", async (fault, reason, message) => {
      const labels = { service_type: type, model, reason };
      const before = await metric(gw, "svc_llm_stream_incomplete_total", labels);
      const data = await streamed(model, `[${fault}]`);
      expect(data).not.toContain("[DONE]");
      const errors = data.filter((d) => d.includes('"error"'));
      expect(errors).toHaveLength(1);
      expect(data[data.length - 1]).toBe(errors[0]);
      const error = (JSON.parse(errors[0]) as { error: { message: string; type: string } }).error;
      expect(error.type).toBe("backend_error");
      expect(error.message).toMatch(message);
      await waitUntil(async () => (await metric(gw, "svc_llm_stream_incomplete_total", labels)) === before + 1, 5_000, () => `${reason} never counted`);
      expect(gw.output()).toContain("llm_stream_incomplete");
      expect(gw.output()).toContain(backend.url.replace("http://", ""));
    });

    it("a complete stream ends with [DONE] and is not counted as incomplete", async () => {
      const before = await metric(gw, "svc_llm_stream_incomplete_total", { model });
      const data = await streamed(model, "whole");
      expect(data[data.length - 1]).toBe("[DONE]");
      expect(data.some((d) => d.includes('"error"'))).toBe(false);
      expect(await metric(gw, "svc_llm_stream_incomplete_total", { model })).toBe(before);
    });
  });

  it.each(["reset-first", "empty-first"] as const)("a stream that fails before its first event (%s) fails over to the next backend", async (fault) => {
    failing.faultStreams(fault);
    try {
      const calls = failing.calls(CHAT).length;
      const data = await streamed("failover", `fo-${fault}`);
      expect(data[data.length - 1]).toBe("[DONE]");
      expect(data.some((d) => d.includes('"error"'))).toBe(false);
      expect(failing.calls(CHAT).length).toBe(calls + 1);
      expect(backend.received.some((r) => JSON.stringify(r.body).includes(`fo-${fault}`))).toBe(true);
    } finally {
      failing.faultStreams(undefined);
    }
  });

  it("with the spec's default (llm.count_streamed_tokens false) counts no streamed tokens", async () => {
    const tokensBefore = await metric(gw, "svc_llm_tokens_total", { model: "chat" });
    const data = await streamed("chat", "spec");
    expect(data[data.length - 1]).toBe("[DONE]");
    await waitUntil(async () => (await metric(gw, "svc_llm_requests_total", { model: "chat", status: "200" })) > 0);
    expect(await metric(gw, "svc_llm_tokens_total", { model: "chat" })).toBe(tokensBefore);
    expect(await metric(gw, "svc_llm_stream_usage_missing_total")).toBe(0);
  });
});
