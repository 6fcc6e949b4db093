/**
 * The LLM proxy as a user meets it: the real gateway process against fake backends that speak
 * each protocol (test/fixtures/llm-backends.ts), through plain `fetch` and the official
 * `openai` client.
 */
import OpenAI from "openai";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { freePort } from "../support/servers.ts";
import { CHAT_USAGE, type FakeBackend, LOCAL_COUNTS, MESSAGES_USAGE, type ReceivedRequest, startLlmBackend } from "../fixtures/llm-backends.ts";
import { type FakeBackend as HttpBackend, startBackend } from "../fixtures/http-backend.ts";
import { cacheKey } from "../../plugins/response-cache/key.ts";

type Json = Record<string, unknown>;

const examplePath = new URL("../../examples/custom-provider.ts", import.meta.url).pathname;
const CHAT = "/v1/chat/completions";

function post(gw: GatewayProcess, body: unknown, headers: Record<string, string> = {}, path = CHAT): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function postJson(
  gw: GatewayProcess,
  body: unknown,
  headers: Record<string, string> = {},
  path = CHAT,
): Promise<{ status: number; headers: Headers; body: Json }> {
  const response = await post(gw, body, headers, path);
  return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
}

/** The SSE `data:` payloads of a whole response body. */
function sseData(text: string): string[] {
  return text.split(/\n\n/).flatMap((block) => block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)));
}

/** The request the backend got whose body mentions `marker`. */
function receivedWith(backend: FakeBackend, marker: string): ReceivedRequest[] {
  return backend.received.filter((r) => JSON.stringify(r.body).includes(marker));
}

function only(backend: FakeBackend, marker: string): ReceivedRequest {
  const found = receivedWith(backend, marker);
  expect(found).toHaveLength(1);
  return found[0];
}

const user = (content: string) => ({ role: "user", content });

/** The value of one Prometheus sample whose labels include `labels`; 0 when absent. */
async function metric(gw: GatewayProcess, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  let total = 0;
  let seen = false;
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const sample: Record<string, string> = {};
    for (const pair of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) sample[pair[1]] = pair[2];
    if (Object.entries(labels).every(([k, v]) => sample[k] === v)) {
      total += Number(match[3]);
      seen = true;
    }
  }
  return seen ? total : 0;
}

/** Sends `body` until it is answered from the cache (the fill runs after the first response is written). */
async function untilHit(gw: GatewayProcess, body: unknown): Promise<Json> {
  let hit: Json | undefined;
  await waitUntil(
    async () => {
      const response = await post(gw, body);
      const json = (await response.json()) as Json;
      if (response.headers.get("x-cache") === "HIT") hit = json;
      return hit !== undefined;
    },
    10_000,
    () => "the response was never served from the cache",
  );
  return hit as Json;
}

describe("LLM proxy", () => {
  let backend: FakeBackend;
  let failing: FakeBackend;
  let lenient: HttpBackend;
  let gw: GatewayProcess;
  let deadUrl: string;

  beforeAll(async () => {
    [backend, failing, lenient] = await Promise.all([startLlmBackend(), startLlmBackend(), startBackend({ kind: "sse", events: 2 })]);
    failing.failWith(503);
    deadUrl = `http://127.0.0.1:${await freePort()}`;
    const ops = `operations: { chat: [${CHAT}] }`;
    gw = await startGateway(`
server:
  consumer_header: x-consumer
  user_type_header: x-user-type
metrics:
  top_consumers: 2
plugins:
  load: [${JSON.stringify(examplePath)}]
services:
  - type: chat
    model: gpt-alias
    provider: chat_completions
    backend_model: backend-gpt
    inference_url: ${backend.url}
    inference_headers: { x-api-key: service-key, x-shared: from-service }
    ${ops}
  - type: chat
    model: failover
    provider: chat_completions
    backends:
      - { url: ${deadUrl}, weight: 5 }
      - { url: ${failing.url}, weight: 3 }
      - { url: ${backend.url}, weight: 0, model: fallback-model, headers: { x-backend: fallback } }
    ${ops}
  - type: chat
    model: messages-alias
    provider: messages_api
    backend_model: msg-model
    inference_url: ${backend.url}
    inference_headers: { x-api-version: "2023-06-01", x-api-key: msg-key }
    ${ops}
  - type: chat
    model: local-alias
    provider: local_chat
    inference_url: ${backend.url}
    ${ops}
  - type: raw
    model: raw
    provider: passthrough
    inference_url: ${backend.url}
    operations: { echo: [/v1/custom/*] }
  - type: chat
    model: cached
    provider: chat_completions
    response_cache_ttl: 60
    inference_url: ${backend.url}
    ${ops}
  - type: chat
    model: cached-messages
    provider: messages_api
    response_cache_ttl: 60
    inference_url: ${backend.url}
    ${ops}
  - type: chat
    model: uncached
    provider: chat_completions
    inference_url: ${backend.url}
    ${ops}
  - type: chat
    model: loud
    provider: shouting
    inference_url: ${backend.url}
    ${ops}
  - type: chat
    model: local-default
    provider: local_chat
    ${ops}
  - type: chat
    model: nowhere
    provider: passthrough
    ${ops}
  - type: chat
    model: lenient
    provider: chat_completions
    response_cache_ttl: 60
    inference_url: ${lenient.url}
    ${ops}
`);
  });

  afterAll(async () => {
    await gw?.kill();
    await Promise.all([backend?.stop(), failing?.stop(), lenient?.close()]);
  });

  describe("chat_completions", () => {
    it("forwards to the same path with the backend model and the service headers, and returns the answer as is", async () => {
      const { status, headers, body } = await postJson(gw, { model: "gpt-alias", messages: [user("cc-basic")] }, {
        "x-shared": "from-client",
        "x-client": "kept",
      });
      expect(status).toBe(200);
      expect(headers.get("x-cache")).toBe("MISS");
      expect(body).toMatchObject({ object: "chat.completion", model: "backend-gpt", choices: [{ message: { content: "echo: cc-basic" } }] });
      expect(body.usage).toEqual({ ...CHAT_USAGE, total_tokens: 18 });
      const sent = only(backend, "cc-basic");
      expect(sent.path).toBe(CHAT);
      expect((sent.body as Json).model).toBe("backend-gpt");
      expect(sent.headers["x-api-key"]).toBe("service-key");
      expect(sent.headers["x-shared"]).toBe("from-service");
      expect(sent.headers["x-client"]).toBe("kept");
    });

    it("passes a backend 4xx through without trying another backend", async () => {
      const { status, body } = await postJson(gw, { model: "gpt-alias", messages: [user("[status:400] cc-4xx")] });
      expect(status).toBe(400);
      expect(body).toEqual({ error: { message: "forced 400", type: "invalid_request_error", code: null } });
      expect(receivedWith(backend, "cc-4xx")).toHaveLength(1);
    });
  });

  describe("failover", () => {
    it("skips a dead backend and a 503 and answers from the fallback with its model and headers", async () => {
      const before = failing.received.length;
      const { status, body } = await postJson(gw, { model: "failover", messages: [user("fo-basic")] });
      expect(status).toBe(200);
      expect(body).toMatchObject({ model: "fallback-model", choices: [{ message: { content: "echo: fo-basic" } }] });
      expect(failing.received.length).toBe(before + 1);
      const sent = only(backend, "fo-basic");
      expect((sent.body as Json).model).toBe("fallback-model");
      expect(sent.headers["x-backend"]).toBe("fallback");
    });

    it("fails over a stream before its headers are written", async () => {
      const response = await post(gw, { model: "failover", stream: true, messages: [user("fo-stream")] });
      expect(response.status).toBe(200);
      const data = sseData(await response.text());
      expect(data[data.length - 1]).toBe("[DONE]");
      expect(only(backend, "fo-stream").headers["x-backend"]).toBe("fallback");
    });

    it("answers 502 naming every backend when none answers", async () => {
      failing.failWith(undefined);
      const dead = await startGateway(`
services:
  - type: chat
    model: all-dead
    provider: chat_completions
    backends: [{ url: ${deadUrl}, weight: 1 }, { url: ${deadUrl}/second, weight: 0 }]
    operations: { chat: [${CHAT}] }
`);
      try {
        const { status, body } = await postJson(dead, { model: "all-dead", messages: [user("x")] });
        expect(status).toBe(502);
        expect((body.error as Json).type).toBe("backend_error");
        expect((body.error as Json).message).toContain(deadUrl);
        expect((body.error as Json).message).toContain(`${deadUrl}/second`);
        expect(await metric(dead, "svc_llm_requests_total", { model: "all-dead", status: "502" })).toBe(1);
      } finally {
        failing.failWith(503);
        await dead.kill();
      }
    });
  });

  describe("messages_api translation", () => {
    it("translates the request: system string, max_tokens default, stop_sequences, Messages endpoint, service headers", async () => {
      const { status, body } = await postJson(
        gw,
        {
          model: "messages-alias",
          messages: [{ role: "system", content: "Be terse." }, { role: "developer", content: "Use English." }, user("mt-request")],
          stop: "END",
          temperature: 0.2,
          n: 1,
          frequency_penalty: 0,
          user: "end-user-7",
        },
        {},
        "/v1/chat/completions?trace=1",
      );
      expect(status).toBe(200);
      const sent = only(backend, "mt-request");
      expect(sent.path).toBe("/v1/messages");
      expect(sent.headers["x-api-version"]).toBe("2023-06-01");
      expect(sent.headers["x-api-key"]).toBe("msg-key");
      expect(sent.body).toEqual({
        model: "msg-model",
        system: "Be terse.\n\nUse English.",
        messages: [{ role: "user", content: "mt-request" }],
        max_tokens: 4096,
        stop_sequences: ["END"],
        temperature: 0.2,
        metadata: { user_id: "end-user-7" },
      });
      expect(body.object).toBe("chat.completion");
    });

    it("takes max_completion_tokens (else max_tokens) and a stop array", async () => {
      await postJson(gw, { model: "messages-alias", messages: [user("mt-limit-a")], max_tokens: 100, max_completion_tokens: 50, stop: ["a", "b"] });
      await postJson(gw, { model: "messages-alias", messages: [user("mt-limit-b")], max_tokens: 100 });
      expect(only(backend, "mt-limit-a").body).toMatchObject({ max_tokens: 50, stop_sequences: ["a", "b"] });
      expect(only(backend, "mt-limit-b").body).toMatchObject({ max_tokens: 100 });
    });

    it("translates the response: text blocks joined, end_turn -> stop, usage mapped", async () => {
      const { status, headers, body } = await postJson(gw, { model: "messages-alias", messages: [user("mt-response")] });
      expect(status).toBe(200);
      expect(headers.get("content-type")).toContain("application/json");
      expect(body).toMatchObject({
        id: "msg_fake",
        object: "chat.completion",
        model: "msg-model",
        choices: [{ index: 0, message: { role: "assistant", content: "Hello there" }, finish_reason: "stop" }],
        usage: { prompt_tokens: MESSAGES_USAGE.input_tokens, completion_tokens: MESSAGES_USAGE.output_tokens, total_tokens: 17 },
      });
      expect(typeof body.created).toBe("number");
    });

    it("maps stop_sequence -> stop and max_tokens -> length", async () => {
      const stopped = await postJson(gw, { model: "messages-alias", messages: [user("[stopseq] mt-fr")] });
      const limited = await postJson(gw, { model: "messages-alias", messages: [user("[max] mt-fr")] });
      expect((stopped.body.choices as Json[])[0].finish_reason).toBe("stop");
      expect((limited.body.choices as Json[])[0].finish_reason).toBe("length");
    });

    it("translates tools and tool_choice, and tool_use blocks back to tool_calls", async () => {
      const { body } = await postJson(gw, {
        model: "messages-alias",
        messages: [user("[tool] mt-tools")],
        tools: [{
          type: "function",
          function: { name: "get_weather", description: "Weather by city", parameters: { type: "object", properties: { city: { type: "string" } } } },
        }],
        tool_choice: { type: "function", function: { name: "get_weather" } },
        parallel_tool_calls: false,
      });
      const sent = only(backend, "mt-tools").body as Json;
      expect(sent.tools).toEqual([{
        name: "get_weather",
        description: "Weather by city",
        input_schema: { type: "object", properties: { city: { type: "string" } } },
      }]);
      expect(sent.tool_choice).toEqual({ type: "tool", name: "get_weather", disable_parallel_tool_use: true });
      const choice = (body.choices as Json[])[0];
      expect(choice.finish_reason).toBe("tool_calls");
      expect(choice.message).toEqual({
        role: "assistant",
        content: "Hello there",
        tool_calls: [{ id: "toolu_01", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris","days":2}' } }],
      });
    });

    it("sends assistant tool_calls as tool_use blocks and tool results as one user message", async () => {
      await postJson(gw, {
        model: "messages-alias",
        tool_choice: "required",
        tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
        messages: [
          user("mt-history"),
          {
            role: "assistant",
            content: null,
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
              { id: "call_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
            ],
          },
          { role: "tool", tool_call_id: "call_1", content: "sunny" },
          { role: "tool", tool_call_id: "call_2", content: "rainy" },
        ],
      });
      const sent = only(backend, "mt-history").body as Json;
      expect(sent.tool_choice).toEqual({ type: "any" });
      expect(sent.messages).toEqual([
        { role: "user", content: "mt-history" },
        {
          role: "assistant",
          content: [
            { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } },
            { type: "tool_use", id: "call_2", name: "get_weather", input: { city: "Rome" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_1", content: "sunny" },
            { type: "tool_result", tool_use_id: "call_2", content: "rainy" },
          ],
        },
      ]);
    });

    it("translates a backend error body and keeps its status", async () => {
      const { status, body } = await postJson(gw, { model: "messages-alias", messages: [user("[status:429] mt-error")] });
      expect(status).toBe(429);
      expect(body).toEqual({ error: { message: "forced 429", type: "invalid_request_error" } });
    });

    it("answers 400 for a request it cannot translate, without calling the backend", async () => {
      const { status, body } = await postJson(gw, { model: "messages-alias", messages: [{ role: "narrator", content: "mt-bad-role" }] });
      expect(status).toBe(400);
      expect((body.error as Json).message).toContain('role "narrator"');
      expect(receivedWith(backend, "mt-bad-role")).toHaveLength(0);
    });

    it("translates the event stream to chat-completions chunks with the usage chunk", async () => {
      const response = await post(gw, {
        model: "messages-alias",
        stream: true,
        messages: [user("[tool] mt-stream")],
        tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }],
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/event-stream");
      const data = sseData(await response.text());
      expect(data[data.length - 1]).toBe("[DONE]");
      const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Json);
      expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.id === "msg_fake")).toBe(true);
      const deltas = chunks.flatMap((c) => (c.choices as Json[]).map((choice) => choice.delta as Json));
      expect(deltas[0]).toEqual({ role: "assistant", content: "" });
      expect(deltas.map((d) => d.content ?? "").join("")).toBe("Hello there");
      const toolDeltas = deltas.flatMap((d) => (d.tool_calls as Json[] | undefined) ?? []);
      expect(toolDeltas[0]).toEqual({ index: 0, id: "toolu_01", type: "function", function: { name: "lookup", arguments: "" } });
      expect(toolDeltas.map((t) => (t.function as Json).arguments).join("")).toBe('{"city": "Paris", "days": 2}');
      const finishes = chunks.flatMap((c) => (c.choices as Json[]).map((choice) => choice.finish_reason)).filter((f) => f !== null);
      expect(finishes).toEqual(["tool_calls"]);
      expect(chunks[chunks.length - 1]).toMatchObject({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } });
      const sent = only(backend, "mt-stream").body as Json;
      expect(sent.stream).toBe(true);
      expect(sent).not.toHaveProperty("stream_options");
    });
  });

  describe("local_chat translation", () => {
    it("posts to /api/chat with stream false and options, and answers in the chat-completions format", async () => {
      const { status, body } = await postJson(gw, { model: "local-alias", messages: [user("lc-basic")], temperature: 0.1, max_tokens: 20, stop: "x" });
      expect(status).toBe(200);
      const sent = only(backend, "lc-basic");
      expect(sent.path).toBe("/api/chat");
      expect(sent.body).toEqual({
        model: "local-alias",
        messages: [{ role: "user", content: "lc-basic" }],
        stream: false,
        options: { temperature: 0.1, stop: ["x"], num_predict: 20 },
      });
      expect(body).toMatchObject({
        object: "chat.completion",
        model: "local-alias",
        created: Date.parse("2026-01-01T00:00:00Z") / 1000,
        choices: [{ message: { role: "assistant", content: "Hi local" }, finish_reason: "stop" }],
        usage: { prompt_tokens: LOCAL_COUNTS.prompt_eval_count, completion_tokens: LOCAL_COUNTS.eval_count, total_tokens: 13 },
      });
    });

    it("leaves usage out when the runtime leaves a count out (unknown, not 0)", async () => {
      const before = await metric(gw, "svc_llm_tokens_total", { model: "local-alias" });
      const { body } = await postJson(gw, { model: "local-alias", messages: [user("[nocount] lc-nocount")] });
      expect(body).not.toHaveProperty("usage");
      expect(await metric(gw, "svc_llm_tokens_total", { model: "local-alias" })).toBe(before);
    });

    it("translates tool calls and the NDJSON stream", async () => {
      const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }];
      const { body } = await postJson(gw, { model: "local-alias", messages: [user("[tool] lc-tool")], tools });
      const choice = (body.choices as Json[])[0];
      expect(choice.finish_reason).toBe("tool_calls");
      const calls = (choice.message as Json).tool_calls as Json[];
      expect(calls[0]).toMatchObject({ type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } });
      expect(String(calls[0].id)).toMatch(/^call_/);

      const response = await post(gw, { model: "local-alias", stream: true, messages: [user("[max] lc-stream")] });
      expect(response.headers.get("content-type")).toContain("text/event-stream");
      const data = sseData(await response.text());
      expect(data[data.length - 1]).toBe("[DONE]");
      const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as Json);
      const deltas = chunks.flatMap((c) => (c.choices as Json[]).map((x) => x.delta as Json));
      expect(deltas.map((d) => d.content ?? "").join("")).toBe("Hi local");
      expect(chunks.flatMap((c) => (c.choices as Json[]).map((x) => x.finish_reason)).filter(Boolean)).toEqual(["length"]);
      expect(chunks[chunks.length - 1]).toMatchObject({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 } });
      expect((only(backend, "lc-stream").body as Json).stream).toBe(true);
    });

    it("uses the provider's default address when the service has none", async () => {
      const { status, body } = await postJson(gw, { model: "local-default", messages: [user("lc-default")] });
      expect(status).toBe(502);
      expect((body.error as Json).message).toContain("http://127.0.0.1:11434");
    });
  });

  describe("passthrough", () => {
    it("forwards the exact bytes to the same path and returns a usage-less answer, counting the request but no tokens", async () => {
      const raw = '{ "model": "raw",   "input": "pt-verbatim", "extra": [1, 2] }';
      const response = await post(gw, raw, {}, "/v1/custom/echo?x=1");
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ echo: JSON.parse(raw), path: "/v1/custom/echo" });
      const sent = only(backend, "pt-verbatim");
      expect(sent.path).toBe("/v1/custom/echo");
      expect(await metric(gw, "svc_llm_requests_total", { model: "raw", provider: "passthrough", status: "200" })).toBe(1);
      expect(await metric(gw, "svc_llm_tokens_total", { model: "raw" })).toBe(0);
    });

    it("answers 502 when a passthrough service has no address (no default)", async () => {
      const { status, body } = await postJson(gw, { model: "nowhere", messages: [user("pt-nowhere")] });
      expect(status).toBe(502);
      expect((body.error as Json).message).toContain("has no backend");
    });
  });

  describe("streaming", () => {
    it("injects stream_options.include_usage and pipes the backend's events as they come", async () => {
      const release = backend.holdStreams();
      const response = await post(gw, { model: "gpt-alias", stream: true, messages: [user("st-flush")] });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-cache")).toBe("MISS");
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      // The backend holds everything after its first event: this read can only succeed if the gateway flushed it.
      const first = decoder.decode((await reader.read()).value);
      expect(first).toContain('"role":"assistant"');
      expect(first).not.toContain("[DONE]");
      release();
      let rest = "";
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += decoder.decode(chunk.value, { stream: true });
      const data = sseData(first + rest);
      expect(data[data.length - 1]).toBe("[DONE]");
      expect(JSON.parse(data[data.length - 2]) as Json).toMatchObject({ choices: [], usage: CHAT_USAGE });
      const sent = only(backend, "st-flush").body as Json;
      expect(sent.stream_options).toEqual({ include_usage: true });
    });

    it("keeps a client's explicit include_usage: false", async () => {
      const response = await post(gw, { model: "gpt-alias", stream: true, stream_options: { include_usage: false }, messages: [user("st-nousage")] });
      const data = sseData(await response.text());
      expect(data.some((d) => d.includes('"usage"'))).toBe(false);
      expect((only(backend, "st-nousage").body as Json).stream_options).toEqual({ include_usage: false });
    });

    it("counts the request but no tokens for streams", async () => {
      const labels = { model: "uncached", provider: "chat_completions", status: "200" };
      const before = await metric(gw, "svc_llm_requests_total", labels);
      const tokensBefore = await metric(gw, "svc_llm_tokens_total", { model: "uncached" });
      await (await post(gw, { model: "uncached", stream: true, messages: [user("st-count")] })).text();
      await waitUntil(async () => (await metric(gw, "svc_llm_requests_total", labels)) === before + 1);
      expect(await metric(gw, "svc_llm_tokens_total", { model: "uncached" })).toBe(tokensBefore);
    });
  });

  describe("response cache", () => {
    const base = { model: "cached", messages: [user("rc-base")], temperature: 0.5 };

    it("misses, then serves the same answer from the cache without calling the backend", async () => {
      const first = await postJson(gw, base);
      expect(first.headers.get("x-cache")).toBe("MISS");
      const hit = await untilHit(gw, base);
      expect(hit).toEqual(first.body);
      const calls = receivedWith(backend, "rc-base").length;
      const again = await post(gw, base);
      expect(again.headers.get("x-cache")).toBe("HIT");
      expect(again.headers.get("content-type")).toContain("application/json");
      expect(receivedWith(backend, "rc-base")).toHaveLength(calls);
      expect(await metric(gw, "svc_cache_hits_total", { service_type: "chat", model: "cached" })).toBeGreaterThanOrEqual(2);
      expect(await metric(gw, "svc_cache_misses_total", { service_type: "chat", model: "cached" })).toBeGreaterThanOrEqual(1);
    });

    it("keys on the canonical subset: key order, whitespace, user and metadata do not matter; temperature does", async () => {
      await untilHit(gw, base);
      const reordered = `{"temperature":0.5,\n  "messages" : [ {"content":"rc-base","role":"user"} ],"model":"cached"}`;
      expect((await post(gw, reordered)).headers.get("x-cache")).toBe("HIT");
      expect((await post(gw, { ...base, user: "someone-else", metadata: { a: "b" }, unknown_field: 1 })).headers.get("x-cache")).toBe("HIT");
      expect((await post(gw, { ...base, temperature: 0.7 })).headers.get("x-cache")).toBe("MISS");
    });

    it("is bypassed by Cache-Control: no-cache and by streams", async () => {
      await untilHit(gw, base);
      const before = receivedWith(backend, "rc-base").length;
      const bypassed = await post(gw, base, { "cache-control": "no-cache" });
      expect(bypassed.headers.get("x-cache")).toBe("MISS");
      await bypassed.json();
      const streamed = await post(gw, { ...base, stream: true });
      expect(streamed.headers.get("x-cache")).toBe("MISS");
      expect(sseData(await streamed.text()).pop()).toBe("[DONE]");
      expect(receivedWith(backend, "rc-base")).toHaveLength(before + 2);
    });

    it("does not store non-2xx answers, nor anything for a service with TTL 0", async () => {
      const failingBody = { model: "cached", messages: [user("[status:400] rc-fail")] };
      const uncachedBody = { model: "uncached", messages: [user("rc-ttl0")] };
      expect((await post(gw, failingBody)).status).toBe(400);
      expect((await post(gw, uncachedBody)).headers.get("x-cache")).toBe("MISS");
      // A later request's fill has landed, so the first two had their chance to be stored.
      await untilHit(gw, { model: "cached", messages: [user("rc-barrier")] });
      const failedAgain = await post(gw, failingBody);
      expect(failedAgain.headers.get("x-cache")).toBe("MISS");
      expect((await post(gw, uncachedBody)).headers.get("x-cache")).toBe("MISS");
      expect(receivedWith(backend, "rc-fail")).toHaveLength(2);
      expect(receivedWith(backend, "rc-ttl0")).toHaveLength(2);
      expect(await metric(gw, "svc_cache_misses_total", { model: "uncached" })).toBe(0);
    });

    it("caches the translated answer of a messages_api service", async () => {
      const body = { model: "cached-messages", messages: [user("rc-messages")] };
      const first = await postJson(gw, body);
      const hit = await untilHit(gw, body);
      expect(hit).toEqual(first.body);
      expect(hit).toMatchObject({ object: "chat.completion", choices: [{ message: { content: "Hello there" } }] });
    });
  });

  describe("the request's shape, checked before anything is sent", () => {
    const wrong: Array<[Json, string]> = [
      [{ stream: "yes" }, '"stream" must be true or false, not "yes"'],
      [{ stream: 1 }, '"stream" must be true or false, not 1'],
      [{ n: "3" }, '"n" must be a positive integer, not "3"'],
      [{ n: 0 }, '"n" must be a positive integer, not 0'],
      [{ max_tokens: 1.5 }, '"max_tokens" must be a non-negative integer, not 1.5'],
      [{ max_completion_tokens: -1 }, '"max_completion_tokens" must be a non-negative integer, not -1'],
      [{ messages: "hi" }, '"messages" must be an array of objects, not "hi"'],
      [{ messages: ["hi"] }, '"messages" must be an array of objects, not ["hi"]'],
      [{ temperature: "0.5" }, '"temperature" must be a number, not "0.5"'],
      [{ stop: ["END", 1] }, '"stop" must be a string or an array of strings, not ["END",1]'],
      [{ stream_options: true }, '"stream_options" must be an object whose "include_usage" is true or false, not true'],
      [
        { stream: true, stream_options: { include_usage: "no" } },
        '"stream_options" must be an object whose "include_usage" is true or false, not {"include_usage":"no"}',
      ],
      [{ tools: { type: "function" } }, '"tools" must be an array of objects, not {"type":"function"}'],
      [{ response_format: "json" }, '"response_format" must be an object, not "json"'],
    ];

    it.each(wrong)("%j: 400 naming the field, and the backend gets nothing", async (field, message) => {
      const marker = `shape-${JSON.stringify(field)}`;
      for (const [model, path] of [["cached", CHAT], ["local-alias", CHAT], ["raw", "/v1/custom/x"]]) {
        const { status, headers, body } = await postJson(gw, { model, messages: [user("hi")], marker, ...field }, {}, path);
        expect({ model, status }).toEqual({ model, status: 400 });
        expect(headers.get("content-type")).toContain("application/json");
        expect(body).toEqual({ error: { type: "invalid_request_error", message, code: "invalid_request" } });
      }
      expect(receivedWith(backend, marker)).toHaveLength(0);
    });

    it("counts a refused request as a 400, with no cache lookup and no LLM request", async () => {
      const misses = await metric(gw, "svc_cache_misses_total", { model: "cached" });
      const refused = await metric(gw, "svc_gateway_requests_total", { status: "400", mode: "llm", service_type: "chat" });
      const llmRequests = await metric(gw, "svc_llm_requests_total", { model: "cached" });
      expect((await post(gw, { model: "cached", stream: "yes", messages: [user("shape-counted")] })).status).toBe(400);
      expect(await metric(gw, "svc_gateway_requests_total", { status: "400", mode: "llm", service_type: "chat" })).toBe(refused + 1);
      expect(await metric(gw, "svc_cache_misses_total", { model: "cached" })).toBe(misses);
      expect(await metric(gw, "svc_llm_requests_total", { model: "cached" })).toBe(llmRequests);
    });

    it("takes null as not set, as the OpenAI API does", async () => {
      const { status, body } = await postJson(gw, {
        model: "gpt-alias",
        messages: [user("shape-nulls")],
        stream: null,
        stream_options: null,
        n: null,
        max_tokens: null,
        temperature: null,
        stop: null,
        user: null,
      });
      expect(status).toBe(200);
      expect(body).toMatchObject({ object: "chat.completion", choices: [{ message: { content: "echo: shape-nulls" } }] });
      expect(only(backend, "shape-nulls").body).toMatchObject({ stream: null, n: null });
    });

    it("refuses a top-level field twice with 400 naming it, whatever the content type", async () => {
      const twice = `{"model":"cached","messages":[{"role":"user","content":"shape-twice"}],"model":"gpt-alias"}`;
      for (const headers of [{ "content-type": "application/json" }, { "content-type": "text/plain" }]) {
        const response = await fetch(`${gw.url}${CHAT}`, { method: "POST", headers, body: twice });
        expect(response.status).toBe(400);
        expect(await response.json()).toEqual({
          error: {
            type: "invalid_request_error",
            message: 'the JSON body has the field "model" more than once; send each field once',
            code: "invalid_request",
          },
        });
      }
      const escaped = `{"model":"cached","messages":[{"role":"user","content":"shape-twice"}],"stream":false,"str\u0065am":true}`;
      expect(await (await post(gw, escaped)).json()).toEqual({
        error: { type: "invalid_request_error", message: 'the JSON body has the field "stream" more than once; send each field once', code: "invalid_request" },
      });
      expect(receivedWith(backend, "shape-twice")).toHaveLength(0);
    });
  });

  describe("a backend that streams although the request did not ask it to", () => {
    it("gets its events to that client, but they are not cached nor served to another consumer", async () => {
      const body = { model: "lenient", messages: [user("lenient-stream")] };
      const first = await post(gw, body, { "x-consumer": "ann" });
      expect(first.status).toBe(200);
      expect(first.headers.get("x-cache")).toBe("MISS");
      expect(first.headers.get("content-type")).toContain("text/event-stream");
      expect(await first.text()).toBe('data: {"n":1}\n\ndata: {"n":2}\n\n');
      // The fill runs once the answer is sent: it is refused, and says so.
      await waitUntil(() => gw.output().includes('"response_cache_not_stored"'), 5000, () => gw.output());
      const second = await post(gw, body, { "x-consumer": "bob" });
      expect(second.headers.get("x-cache")).toBe("MISS");
      await second.text();
      expect(lenient.requests).toHaveLength(2);
      expect(await metric(gw, "svc_cache_hits_total", { model: "lenient" })).toBe(0);
    });
  });

  describe("metrics and token tracking", () => {
    it("counts requests, durations and tokens with the spec's labels", async () => {
      const labels = { service_type: "chat", model: "messages-alias", backend_model: "msg-model", user_type: "pro" };
      const before = {
        requests: await metric(gw, "svc_llm_requests_total", { ...labels, provider: "messages_api", status: "200" }),
        prompt: await metric(gw, "svc_llm_tokens_total", { ...labels, type: "prompt" }),
        completion: await metric(gw, "svc_llm_tokens_total", { ...labels, type: "completion" }),
        perRequest: await metric(gw, "svc_llm_tokens_per_request_sum", labels),
        durations: await metric(gw, "svc_llm_request_duration_seconds_count", { ...labels, provider: "messages_api" }),
      };
      for (const i of [1, 2]) await postJson(gw, { model: "messages-alias", messages: [user(`mx-${i}`)] }, { "x-user-type": "pro" });
      expect(await metric(gw, "svc_llm_requests_total", { ...labels, provider: "messages_api", status: "200" })).toBe(before.requests + 2);
      expect(await metric(gw, "svc_llm_tokens_total", { ...labels, type: "prompt" })).toBe(before.prompt + 24);
      expect(await metric(gw, "svc_llm_tokens_total", { ...labels, type: "completion" })).toBe(before.completion + 10);
      expect(await metric(gw, "svc_llm_tokens_per_request_sum", labels)).toBe(before.perRequest + 34);
      expect(await metric(gw, "svc_llm_request_duration_seconds_count", { ...labels, provider: "messages_api" })).toBe(before.durations + 2);
      // A 4xx is counted with its status; the user type label is "" without the header.
      await postJson(gw, { model: "messages-alias", messages: [user("[status:400] mx-4xx")] });
      expect(await metric(gw, "svc_llm_requests_total", { model: "messages-alias", user_type: "", status: "400" })).toBe(1);
    });

    it("publishes the top consumers' cumulative tokens (refreshed at start, so after a reload)", async () => {
      const as = (consumer: string, userType: string, marker: string) =>
        postJson(gw, { model: "gpt-alias", messages: [user(marker)] }, { "x-consumer": consumer, "x-user-type": userType });
      await as("alice", "pro", "top-1");
      await as("alice", "pro", "top-2");
      await as("bob", "free", "top-3");
      await as("carol", "free", "top-4");
      await (await post(gw, { model: "gpt-alias", stream: true, messages: [user("top-stream")] }, { "x-consumer": "dave", "x-user-type": "free" })).text();
      expect((await fetch(`${gw.url}/-/reload`, { method: "POST" })).status).toBe(200);
      await waitUntil(async () => (await metric(gw, "svc_llm_consumer_tokens_top", { consumer: "alice" })) > 0, 10_000);
      expect(await metric(gw, "svc_llm_consumer_tokens_top", { consumer: "alice", user_type: "pro", type: "prompt" })).toBe(22);
      expect(await metric(gw, "svc_llm_consumer_tokens_top", { consumer: "alice", user_type: "pro", type: "completion" })).toBe(14);
      // top_consumers: 2 -> alice and the first of the tied bob / carol.
      expect(await metric(gw, "svc_llm_consumer_tokens_top", { consumer: "bob", type: "prompt" })).toBe(11);
      expect(await metric(gw, "svc_llm_consumer_tokens_top", { consumer: "carol" })).toBe(0);
      expect(await metric(gw, "svc_llm_consumer_tokens_top", { consumer: "dave" })).toBe(0);
    });
  });

  describe("a custom provider plugin (examples/custom-provider.ts)", () => {
    it("routes provider: shouting through the plugin's translators", async () => {
      const { status, body } = await postJson(gw, { model: "loud", messages: [user("cp-whisper")] });
      expect(status).toBe(200);
      expect((body.choices as Json[])[0]).toMatchObject({ message: { content: "ECHO: CP-WHISPER" } });
      expect(body.usage).toMatchObject(CHAT_USAGE);
      const sent = only(backend, "cp-whisper").body as Json;
      expect((sent.messages as Json[])[0]).toEqual({ role: "system", content: "Answer briefly." });

      const streamed = await post(gw, { model: "loud", stream: true, messages: [user("cp-stream")] });
      const data = sseData(await streamed.text());
      const text = data.slice(0, -1).flatMap((d) => ((JSON.parse(d) as Json).choices as Json[]).map((c) => (c.delta as Json).content ?? "")).join("");
      expect(text).toBe("ECHO: CP-STREAM");
      expect(data[data.length - 1]).toBe("[DONE]");
      expect(gw.output()).toMatch(/"event":"gateway_started".*"provider-shouting"/);
    });
  });

  describe("the official openai client", () => {
    const client = () => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "test-key", maxRetries: 0 });

    it("creates a chat completion", async () => {
      const completion = await client().chat.completions.create({ model: "messages-alias", messages: [{ role: "user", content: "oa-basic" }] });
      expect(completion.choices[0].message.content).toBe("Hello there");
      expect(completion.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
    });

    it("streams a chat completion", async () => {
      const stream = await client().chat.completions.create({ model: "gpt-alias", stream: true, messages: [{ role: "user", content: "oa-stream" }] });
      let text = "";
      let usage: unknown;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? "";
        if (chunk.usage) usage = chunk.usage;
      }
      expect(text).toBe("echo: oa-stream");
      expect(usage).toMatchObject(CHAT_USAGE);
    });

    it("lists the models", async () => {
      const ids: string[] = [];
      for await (const model of client().models.list()) ids.push(model.id);
      expect(ids).toEqual(expect.arrayContaining(["gpt-alias", "messages-alias", "local-alias", "loud"]));
    });

    it("surfaces a translated backend error as an API error", async () => {
      await expect(client().chat.completions.create({ model: "messages-alias", messages: [{ role: "user", content: "[status:400] oa-error" }] })).rejects
        .toMatchObject({
          status: 400,
          error: { message: "forced 400", type: "invalid_request_error" },
        });
    });
  });
});

describe("LLM response cache on Redis", () => {
  let backend: FakeBackend;
  let lenient: HttpBackend;
  let gw: GatewayProcess;
  const redis = createClient({ url: inject("redisUrl"), database: 1 });

  beforeAll(async () => {
    [backend, lenient] = await Promise.all([startLlmBackend(), startBackend({ kind: "sse", events: 2 })]);
    await redis.connect();
    gw = await startGateway(`
server:
  consumer_header: x-consumer
rate_limits:
  chat: { "*": { rate: 2, period: 1m } }
redis:
  addr: ${JSON.stringify(inject("redisUrl"))}
  db: 1
services:
  - type: chat
    model: redis-cached
    provider: chat_completions
    response_cache_ttl: 30
    inference_url: ${backend.url}
    operations: { chat: [${CHAT}] }
  - type: chat
    model: redis-lenient
    provider: chat_completions
    response_cache_ttl: 30
    inference_url: ${lenient.url}
    operations: { chat: [${CHAT}] }
`);
  });

  afterAll(async () => {
    await gw?.kill();
    await Promise.all([backend?.stop(), lenient?.close()]);
    await redis.quit();
  });

  it("does not store the events of a backend that streams although the request did not ask it to", async () => {
    const body = { model: "redis-lenient", messages: [user(`rd-lenient-${Date.now()}`)] };
    const key = cacheKey({ serviceType: "chat", pathAndQuery: CHAT }, "redis-lenient", body);
    const first = await post(gw, body, { "x-consumer": "ann" });
    expect(first.headers.get("content-type")).toContain("text/event-stream");
    await first.text();
    await waitUntil(() => gw.output().includes('"response_cache_not_stored"'), 5000, () => gw.output());
    expect(await redis.exists(key)).toBe(0);
    const second = await post(gw, body, { "x-consumer": "bob" });
    expect(second.headers.get("x-cache")).toBe("MISS");
    await second.text();
    expect(lenient.requests).toHaveLength(2);
  });

  it("stores answers under cache:llm:<sha256> with the service's TTL and serves them to later requests", async () => {
    const body = { model: "redis-cached", messages: [user(`rd-${Date.now()}`)] };
    const first = await postJson(gw, body);
    expect(first.headers.get("x-cache")).toBe("MISS");
    expect(await untilHit(gw, body)).toEqual(first.body);
    const keys = await redis.keys("cache:llm:*");
    expect(keys.length).toBeGreaterThanOrEqual(1);
    expect(await redis.exists(cacheKey({ serviceType: "chat", pathAndQuery: CHAT }, "redis-cached", body))).toBe(1);
    expect(keys.every((k) => /^cache:llm:[0-9a-f]{64}$/.test(k))).toBe(true);
    const ttl = await redis.pTTL(keys[0]);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(30_000);
  });

  it("a request the rate limit refuses counts no cache lookup (the cache read starts before the limit check)", async () => {
    const consumer = { "x-consumer": `rl-${Date.now()}` };
    const ask = (n: number) => postJson(gw, { model: "redis-cached", messages: [user(`rl-${Date.now()}-${n}`)] }, consumer);
    const misses = () => metric(gw, "svc_cache_misses_total", { service_type: "chat", model: "redis-cached" });
    expect((await ask(1)).status).toBe(200);
    expect((await ask(2)).status).toBe(200);
    const before = await misses();
    const refused = await ask(3);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: { type: "rate_limit_error" } });
    expect(await misses()).toBe(before);
  });
});

describe("LLM response cache with the store down", () => {
  it("counts the store error and answers from the backend", async () => {
    const backend = await startLlmBackend();
    const gw = await startGateway(`
redis:
  addr: 127.0.0.1:${await freePort()}
services:
  - type: chat
    model: no-store
    provider: chat_completions
    response_cache_ttl: 30
    inference_url: ${backend.url}
    operations: { chat: [${CHAT}] }
`);
    try {
      const { status, headers, body } = await postJson(gw, { model: "no-store", messages: [user("sd-1")] });
      expect(status).toBe(200);
      expect(headers.get("x-cache")).toBe("MISS");
      expect(body).toMatchObject({ choices: [{ message: { content: "echo: sd-1" } }] });
      expect(await metric(gw, "svc_cache_errors_total", { service_type: "chat", model: "no-store", op: "get" })).toBe(1);
      // The cap and its metrics belong to the embedded store; Redis keeps its own memory.
      expect(await (await fetch(`${gw.url}/metrics`)).text()).not.toMatch(/svc_cache_(memory_bytes|evictions_total)/);
    } finally {
      await gw.kill();
      await backend.stop();
    }
  });
});

describe("LLM response cache on the embedded store, under its memory cap", () => {
  it("keeps the most recently used answers and drops the oldest, which a later request fetches again", async () => {
    const backend = await startLlmBackend();
    // Each answer echoes a 1,500-character message: about 2 KB stored. A 5,000-byte cap holds two.
    const gw = await startGateway(`
redis:
  embedded_cache_max_mb: ${5000 / 1024 / 1024}
services:
  - type: chat
    model: capped
    provider: chat_completions
    response_cache_ttl: 3600
    inference_url: ${backend.url}
    operations: { chat: [${CHAT}] }
`);
    const ask = (marker: string) => ({ model: "capped", messages: [user(`${marker} ${"x".repeat(1500)}`)] });
    try {
      for (const marker of ["cap-a", "cap-b", "cap-c"]) {
        expect((await post(gw, ask(marker))).headers.get("x-cache")).toBe("MISS");
        await untilHit(gw, ask(marker));
      }
      // cap-c went in last and cap-b before it; cap-a, the least recently used, made room.
      expect((await post(gw, ask("cap-c"))).headers.get("x-cache")).toBe("HIT");
      const again = await post(gw, ask("cap-a"));
      expect(again.headers.get("x-cache")).toBe("MISS");
      expect(((await again.json()) as Json).choices).toMatchObject([{ message: { content: `echo: ${ask("cap-a").messages[0].content}` } }]);
      expect(receivedWith(backend, "cap-a")).toHaveLength(2);
      expect(receivedWith(backend, "cap-c")).toHaveLength(1);
      // Two answers of about 2 KB each held; cap-a made room once, then (asked again) cap-b.
      const bytes = await metric(gw, "svc_cache_memory_bytes");
      expect(bytes).toBeGreaterThan(2 * 1500);
      expect(bytes).toBeLessThanOrEqual(5000);
      expect(await metric(gw, "svc_cache_evictions_total")).toBe(2);
    } finally {
      await gw.kill();
      await backend.stop();
    }
  });
});

describe("LLM proxy: cache scope, answers that break off or stall, JSON sent without a JSON type", () => {
  let backend: FakeBackend;
  let dropping: HttpBackend;
  let stalling: HttpBackend;
  let gw: GatewayProcess;
  const TIMEOUT_MS = 800;

  beforeAll(async () => {
    [backend, dropping, stalling] = await Promise.all([
      startLlmBackend(),
      startBackend({ kind: "partial", then: "drop" }),
      startBackend({ kind: "partial", then: "stall" }),
    ]);
    const chatOps = `operations: { chat: [${CHAT}] }`;
    const breaking = (first: string) => `backends: [{ url: ${first}, weight: 1 }, { url: ${backend.url}, weight: 0 }]`;
    gw = await startGateway(`
server:
  backend_timeout: ${TIMEOUT_MS}ms
  consumer_header: x-consumer
services:
  - { type: raw, model: pass, provider: passthrough, response_cache_ttl: 60, inference_url: ${backend.url}, operations: { chat: [${CHAT}], other: [/v1/pass/*] } }
  - { type: chat, model: same, default: true, provider: chat_completions, response_cache_ttl: 60, inference_url: ${backend.url}, ${chatOps} }
  - { type: chatmsg, model: same, provider: messages_api, response_cache_ttl: 60, inference_url: ${backend.url}, operations: { chat: [/v1/messages-chat] } }
  - { type: chat, model: msg, provider: messages_api, inference_url: ${backend.url}, ${chatOps} }
  - { type: chat, model: budget, provider: chat_completions, inference_url: ${backend.url}, token_limits: { "*": { token_rate: 10, token_period: 1m } }, ${chatOps} }
  - { type: chat, model: drops, provider: chat_completions, ${breaking(dropping.url)}, ${chatOps} }
  - { type: chat, model: drops-msg, provider: messages_api, ${breaking(dropping.url)}, ${chatOps} }
  - { type: chat, model: stalls, provider: chat_completions, max_concurrent_sync: 1, ${breaking(stalling.url)}, ${chatOps} }
  - { type: chat, model: stalls-only, provider: chat_completions, inference_url: ${stalling.url}, ${chatOps} }
`);
  });

  afterAll(async () => {
    await gw?.kill();
    await Promise.all([backend?.stop(), dropping?.close(), stalling?.close()]);
  });

  /** POST with a deadline, so an answer that never comes fails the test instead of hanging it. */
  const send = (path: string, body: string | Uint8Array<ArrayBuffer>, headers: Record<string, string> = { "content-type": "application/json" }) =>
    fetch(`${gw.url}${path}`, { method: "POST", headers, body, signal: AbortSignal.timeout(10_000) });

  async function untilHitAt(path: string, body: unknown): Promise<void> {
    await waitUntil(
      async () => {
        const response = await send(path, JSON.stringify(body));
        await response.arrayBuffer();
        return response.headers.get("x-cache") === "HIT";
      },
      10_000,
      () => `${path} was never served from the cache`,
    );
  }

  describe("the cache key covers the service type, the path and a non-chat body", () => {
    it("does not answer another path, query or input of a passthrough wildcard from the cache", async () => {
      await untilHitAt("/v1/pass/foo/bar?q=1", { model: "pass", input: "x" });
      const other = await send("/v1/pass/two", JSON.stringify({ model: "pass", input: "totally different" }));
      expect(other.headers.get("x-cache")).toBe("MISS");
      expect(await other.json()).toEqual({ echo: { model: "pass", input: "totally different" }, path: "/v1/pass/two" });
      for (
        const [path, body] of [["/v1/pass/two", { model: "pass", input: "x" }], ["/v1/pass/foo/bar?q=2", { model: "pass", input: "x" }], [
          "/v1/pass/foo/bar?q=1",
          { model: "pass", input: "y" },
        ]] as const
      ) {
        const response = await send(path, JSON.stringify(body));
        expect(response.headers.get("x-cache"), `${path} ${JSON.stringify(body)}`).toBe("MISS");
        expect(((await response.json()) as Json).echo).toEqual(body);
      }
      // Still cached for the same path and input, whatever the field order and the user.
      const again = await send("/v1/pass/foo/bar?q=1", '{"input":"x","user":"someone","model":"pass"}');
      expect(again.headers.get("x-cache")).toBe("HIT");
    });

    it("does not answer a service of another type that shares the model alias from the cache", async () => {
      const body = { model: "same", messages: [user("scope-type")] };
      await untilHitAt(CHAT, body);
      const other = await send("/v1/messages-chat", JSON.stringify(body));
      expect(other.headers.get("x-cache")).toBe("MISS");
      expect(await other.json()).toMatchObject({ choices: [{ message: { content: "Hello there" } }] });
      await untilHitAt("/v1/messages-chat", body);
      const first = await send(CHAT, JSON.stringify(body));
      expect(first.headers.get("x-cache")).toBe("HIT");
      expect(await first.json()).toMatchObject({ choices: [{ message: { content: "echo: scope-type" } }] });
    });
  });

  describe("a non-streaming answer that breaks off or stalls after its headers", () => {
    it.each(["drops", "drops-msg"])("%s: a backend that closes mid-body fails over to the next one", async (model) => {
      const response = await send(CHAT, JSON.stringify({ model, messages: [user(`broken-${model}`)] }));
      expect(response.status).toBe(200);
      const body = (await response.json()) as Json;
      expect((body.choices as Json[])[0]).toMatchObject({ message: { content: model === "drops" ? `echo: broken-${model}` : "Hello there" } });
      expect(receivedWith(backend, `broken-${model}`)).toHaveLength(1);
      await waitUntil(
        () => gw.output().includes(`"answered_by":"${backend.url}"`) && /llm_backend_failover.*the backend broke off its answer/.test(gw.output()),
        5000,
        () => gw.output(),
      );
    });

    it("a backend that goes silent mid-body fails over after server.backend_timeout, and frees the request's max_concurrent_sync slot", async () => {
      for (const n of [1, 2]) {
        const response = await send(CHAT, JSON.stringify({ model: "stalls", messages: [user(`stalled-${n}`)] }));
        expect(response.status).toBe(200);
        expect(await response.json()).toMatchObject({ choices: [{ message: { content: `echo: stalled-${n}` } }] });
      }
      expect(stalling.requests.filter((r) => r.body.includes("stalled-")).length).toBe(2);
      await waitUntil(() => stalling.requests.every((r) => r.aborted), 5000, () => "the stalled backend requests were never given up");
    });

    it("answers 504 timeout_error when the only backend goes silent mid-body", async () => {
      const started = Date.now();
      const response = await send(CHAT, JSON.stringify({ model: "stalls-only", messages: [user("stalled-only")] }));
      expect(response.status).toBe(504);
      expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      const { error } = (await response.json()) as { error: { type: string; message: string } };
      expect(error.type).toBe("timeout_error");
      expect(error.message).toContain("server.backend_timeout");
      expect(await metric(gw, "svc_llm_requests_total", { model: "stalls-only", status: "504" })).toBe(1);
    });
  });

  describe("a JSON body sent as text/plain, form-urlencoded or with no content type", () => {
    const bodyFor = (marker: string, model = "msg") => JSON.stringify({ model, messages: [user(marker)] });
    const types: Array<[string, Record<string, string>]> = [
      ["text/plain", { "content-type": "text/plain;charset=UTF-8" }],
      ["form-urlencoded (curl -d)", { "content-type": "application/x-www-form-urlencoded" }],
      ["no content type", {}],
    ];

    it.each(types)("%s: is an LLM request for the body's model, sent to the backend as application/json", async (name, headers) => {
      const marker = `untyped-${name}`;
      const response = await send(CHAT, new TextEncoder().encode(bodyFor(marker)), headers);
      expect(response.status).toBe(200);
      expect(response.headers.get("x-cache")).toBe("MISS");
      expect(await response.json()).toMatchObject({ object: "chat.completion", choices: [{ message: { content: "Hello there" } }] });
      const sent = only(backend, marker);
      expect(sent.path).toBe("/v1/messages");
      expect(sent.headers["content-type"]).toBe("application/json");
    });

    it("counts against the token budget, so switching the content type does not get past a 429", async () => {
      const who = { "x-consumer": "untyped-budget" };
      let refused: Response | undefined;
      await waitUntil(
        async () => {
          const response = await send(CHAT, bodyFor(`budget-json-${Date.now()}`, "budget"), { "content-type": "application/json", ...who });
          await response.arrayBuffer();
          if (response.status === 429) refused = response;
          return refused !== undefined;
        },
        10_000,
        () => "the token budget never refused a request",
      );
      for (const [, headers] of types) {
        const response = await send(CHAT, new TextEncoder().encode(bodyFor("budget-untyped", "budget")), { ...headers, ...who });
        expect(response.status).toBe(429);
        expect(await response.json()).toMatchObject({ error: { type: "rate_limit_error" } });
      }
      expect(receivedWith(backend, "budget-untyped")).toHaveLength(0);
    });

    it("a text body that is not a JSON object still goes through the direct proxy as it came", async () => {
      const response = await send("/v1/pass/raw", "hello, not JSON", { "content-type": "text/plain" });
      expect(response.status).toBe(200);
      expect(response.headers.get("x-cache")).toBeNull();
      expect(await response.json()).toEqual({ echo: "hello, not JSON", path: "/v1/pass/raw" });
      expect(backend.calls("/v1/pass/raw").at(-1)?.headers["content-type"]).toBe("text/plain");
    });
  });

  describe("messages_api request fields of the wrong type", () => {
    it.each([
      [{ stop: 5 }, '"stop" must be a string or an array of strings, not 5'],
      [{ max_tokens: "abc" }, '"max_tokens" must be a non-negative integer, not "abc"'],
      [{ stream: "yes" }, '"stream" must be true or false, not "yes"'],
    ])("%j is refused with 400 naming the field", async (extra, message) => {
      const marker = `wrong-type-${Object.keys(extra)[0]}`;
      const response = await send(CHAT, JSON.stringify({ model: "msg", messages: [user(marker)], ...extra }));
      expect(response.status).toBe(400);
      const { error } = (await response.json()) as { error: { type: string; message: string } };
      expect(error.type).toBe("invalid_request_error");
      expect(error.message).toContain(message);
      expect(receivedWith(backend, marker)).toHaveLength(0);
    });
  });
});
