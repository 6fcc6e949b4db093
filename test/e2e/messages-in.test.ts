/**
 * Inbound Messages API (`POST /v1/messages`) as an Anthropic-native client meets it: the
 * official `@anthropic-ai/sdk` client with only its base URL pointed at a real gateway process
 * (Node, and Deno in the Deno subset), in front of a fake Messages-style backend (forwarded as
 * is), a fake chat-completions backend and a fake local runtime (translated both ways): plain and system-prompted
 * messages, streams (the stream helper's final message equals the non-streamed one), a tool-use
 * round trip, the gateway's own errors as the SDK's typed errors, token counting, and honest
 * stream endings (a cut or stalled stream ends with an `error` event, never `message_stop`).
 */
import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";
import { CHAT_USAGE, type FakeBackend, LOCAL_COUNTS, MESSAGES_CACHE_COUNTS, MESSAGES_USAGE, startLlmBackend } from "../fixtures/llm-backends.ts";
import { metricSum } from "../support/prometheus.ts";
import { sseEvents } from "../support/sse.ts";

type Json = Record<string, unknown>;

const IDLE_MS = 300;
const WEATHER_TOOL = {
  name: "get_weather",
  description: "The weather in a city",
  input_schema: { type: "object" as const, properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] },
};

/** The sum of a series' samples whose labels include `labels` (test/support/prometheus.ts). */
async function metric(gw: GatewayProcess, name: string, labels: Record<string, string>): Promise<number> {
  return metricSum(await (await fetch(`${gw.url}/metrics`)).text(), name, labels);
}

const textOf = (content: Anthropic.ContentBlock[]) => content.map((block) => (block.type === "text" ? block.text : "")).join("");

const BACKENDS = [
  { kind: "a Messages-style backend", model: "claude-native", answer: "Hello there", usage: MESSAGES_USAGE },
  {
    kind: "a chat-completions backend",
    model: "claude-chat",
    answer: "echo: hi",
    usage: { input_tokens: CHAT_USAGE.prompt_tokens, output_tokens: CHAT_USAGE.completion_tokens },
  },
  {
    kind: "a local runtime's chat",
    model: "claude-local",
    answer: "Hi local",
    usage: { input_tokens: LOCAL_COUNTS.prompt_eval_count, output_tokens: LOCAL_COUNTS.eval_count },
  },
] as const;

describe("inbound Messages API through the official SDK", () => {
  let backend: FakeBackend;
  let failing: FakeBackend;
  let gw: GatewayProcess;
  let client: Anthropic;

  beforeAll(async () => {
    [backend, failing] = await Promise.all([startLlmBackend(), startLlmBackend()]);
    failing.failWith(500);
    gw = await startGateway(`
server:
  backend_timeout: 5s
  consumer_header: x-consumer
llm:
  stream_idle_timeout: ${IDLE_MS}ms
rate_limits:
  limited:
    "*": { rate: 1, period: 1m }
services:
  - { type: chat, model: claude-native, provider: messages_api, inference_url: ${backend.url}, operations: { messages: [/v1/messages, /v1/messages/count_tokens] } }
  - { type: chat, model: claude-chat, provider: chat_completions, inference_url: ${backend.url}, operations: { messages: [/v1/messages, /v1/messages/count_tokens], chat: [/v1/chat/completions] } }
  - { type: chat, model: claude-local, provider: local_chat, inference_url: ${backend.url}, operations: { messages: [/v1/messages] } }
  - { type: chat, model: claude-verbatim, provider: passthrough, inference_url: ${backend.url}, operations: { messages: [/v1/messages] } }
  - { type: chat, model: claude-cached, provider: chat_completions, inference_url: ${backend.url}, response_cache_ttl: 60, operations: { messages: [/v1/messages] } }
  - { type: chat, model: claude-failover, provider: messages_api, backends: [{ url: ${failing.url}, weight: 1 }, { url: ${backend.url}, weight: 0 }], operations: { messages: [/v1/messages] } }
  - { type: limited, model: claude-limited, provider: chat_completions, inference_url: ${backend.url}, operations: { messages: [/v1/messages] } }
`);
    client = new Anthropic({ baseURL: gw.url, apiKey: "test-key" });
  });

  afterAll(async () => {
    await gw?.kill();
    await Promise.all([backend?.stop(), failing?.stop()]);
  });

  describe.each(BACKENDS)("to $kind", ({ model, answer, usage }) => {
    it("answers a plain message with the backend's text, stop reason and usage", async () => {
      const message = await client.messages.create({ model, max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
      expect(message).toMatchObject({
        type: "message",
        role: "assistant",
        stop_reason: "end_turn",
        usage: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens },
      });
      expect(textOf(message.content)).toBe(answer);
    });

    it("sends the system prompt on to the backend", async () => {
      const message = await client.messages.create({ model, max_tokens: 64, system: `be brief ${model}`, messages: [{ role: "user", content: "hi" }] });
      expect(textOf(message.content)).toBe(answer);
      const sent = backend.received.filter((r) => JSON.stringify(r.body).includes(`be brief ${model}`));
      expect(sent).toHaveLength(1);
      const body = sent[0].body as Json;
      if (model === "claude-native") expect(body.system).toBe(`be brief ${model}`);
      else expect((body.messages as Json[])[0]).toMatchObject({ role: "system", content: `be brief ${model}` });
    });

    it("streams an answer whose final message has the non-streamed content", async () => {
      const request = { model, max_tokens: 64, messages: [{ role: "user" as const, content: "hi" }] };
      const whole = await client.messages.create(request);
      const final = await client.messages.stream(request).finalMessage();
      expect(textOf(final.content)).toBe(textOf(whole.content));
      expect(final.stop_reason).toBe(whole.stop_reason);
      expect(final.usage.output_tokens).toBe(whole.usage.output_tokens);
      // A chat backend's one text block arrives as one block either way.
      if (model !== "claude-native") expect(final.content).toEqual(whole.content);
    });

    it("makes a tool-use round trip, streamed and not", async () => {
      const ask = { role: "user" as const, content: "weather in Paris? [tool]" };
      const call = await client.messages.create({ model, max_tokens: 64, tools: [WEATHER_TOOL], messages: [ask] });
      expect(call.stop_reason).toBe("tool_use");
      const use = call.content.find((block) => block.type === "tool_use");
      expect(use).toMatchObject({ type: "tool_use", name: "get_weather", input: expect.objectContaining({ city: "Paris" }) });
      const streamed = await client.messages.stream({ model, max_tokens: 64, tools: [WEATHER_TOOL], messages: [ask] }).finalMessage();
      expect(streamed.stop_reason).toBe("tool_use");
      // The same call (ids a local runtime does not give are made per answer).
      const calls = (content: Anthropic.ContentBlock[]) =>
        content.flatMap((block) => (block.type === "tool_use" ? [{ name: block.name, input: block.input }] : []));
      expect(calls(streamed.content)).toEqual(calls(call.content));
      if (!use || use.type !== "tool_use") throw new Error("no tool_use block");
      const result = await client.messages.create({
        model,
        max_tokens: 64,
        tools: [WEATHER_TOOL],
        messages: [ask, { role: "assistant", content: call.content }, {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: use.id, content: "sunny" }],
        }],
      });
      expect(result.stop_reason).toBe("end_turn");
      expect(textOf(result.content)).toBe("result: sunny");
    });

    it("keeps a backend error's status, so the SDK raises its typed error", async () => {
      const failed = client.messages.create({ model, max_tokens: 64, messages: [{ role: "user", content: "[status:404]" }] }, { maxRetries: 0 });
      await expect(failed).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    });

    it.each(["cut", "stall"])("ends a %s stream with an error event, not message_stop", async (fault) => {
      const response = await fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, max_tokens: 64, stream: true, messages: [{ role: "user", content: `[${fault}]` }] }),
        signal: AbortSignal.timeout(10_000),
      });
      expect(response.status).toBe(200);
      const events = sseEvents(await response.text());
      expect(events.map((e) => e.event)).not.toContain("message_stop");
      expect(events[events.length - 1]).toEqual({
        event: "error",
        data: { type: "error", error: { type: "api_error", message: expect.stringContaining("incomplete"), code: "stream_interrupted" } },
      });
      // The SDK's stream helper raises it.
      const stream = client.messages.stream({ model, max_tokens: 64, messages: [{ role: "user", content: `[${fault}]` }] });
      await expect(stream.finalMessage()).rejects.toBeInstanceOf(Anthropic.APIError);
    });
  });

  it("counts a Messages answer's tokens as the outbound path does: cache reads and writes are prompt tokens", async () => {
    const before = await metric(gw, "svc_llm_tokens_total", { model: "claude-native" });
    const message = await client.messages.create({ model: "claude-native", max_tokens: 64, messages: [{ role: "user", content: "[cached]" }] });
    expect(message.usage).toMatchObject(MESSAGES_CACHE_COUNTS);
    const prompt = MESSAGES_USAGE.input_tokens + MESSAGES_CACHE_COUNTS.cache_read_input_tokens + MESSAGES_CACHE_COUNTS.cache_creation_input_tokens;
    expect(await metric(gw, "svc_llm_tokens_total", { model: "claude-native" })).toBe(before + prompt + MESSAGES_USAGE.output_tokens);
  });

  it("answers a repeated message from the response cache", async () => {
    const request = { model: "claude-cached", max_tokens: 64, messages: [{ role: "user" as const, content: `cache me ${Date.now()}` }] };
    const first = await client.messages.create(request).withResponse();
    const second = await client.messages.create(request).withResponse();
    expect([first.response.headers.get("x-cache"), second.response.headers.get("x-cache")]).toEqual(["MISS", "HIT"]);
    expect(second.data).toEqual(first.data);
    expect(backend.received.filter((r) => JSON.stringify(r.body).includes(request.messages[0].content))).toHaveLength(1);
  });

  it("fails over to the next backend when one answers 5xx, streamed or not", async () => {
    const calls = failing.received.length;
    const message = await client.messages.create({ model: "claude-failover", max_tokens: 64, messages: [{ role: "user", content: "hi" }] });
    expect(textOf(message.content)).toBe("Hello there");
    const streamed = await client.messages.stream({ model: "claude-failover", max_tokens: 64, messages: [{ role: "user", content: "hi" }] }).finalMessage();
    expect(textOf(streamed.content)).toBe("Hello there");
    expect(failing.received.length).toBe(calls + 2);
  });

  it("forwards a Messages request verbatim to a passthrough backend, streams included (no chat stream_options added)", async () => {
    const streamed = await client.messages.stream({ model: "claude-verbatim", max_tokens: 64, messages: [{ role: "user", content: "verbatim stream" }] })
      .finalMessage();
    expect(textOf(streamed.content)).toBe("Hello there");
    const sent = backend.received.filter((r) => JSON.stringify(r.body).includes("verbatim stream"));
    expect(sent.map((r) => r.path)).toEqual(["/v1/messages"]);
    expect(sent[0].body).toEqual({ model: "claude-verbatim", max_tokens: 64, messages: [{ role: "user", content: "verbatim stream" }], stream: true });
  });

  it("counts tokens where the backend speaks Messages, and answers 404 where it does not", async () => {
    expect(await client.messages.countTokens({ model: "claude-native", messages: [{ role: "user", content: "hi" }] })).toEqual({
      input_tokens: MESSAGES_USAGE.input_tokens,
    });
    expect(backend.calls("/v1/messages/count_tokens").length).toBeGreaterThan(0);
    await expect(client.messages.countTokens({ model: "claude-chat", messages: [{ role: "user", content: "hi" }] })).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
  });

  describe("fields of the wrong type, refused in the Messages shape before anything is sent", () => {
    const wrong: Array<[Json, string]> = [
      [{ stream: "yes" }, '"stream" must be true or false, not "yes"'],
      [{ stream: 1 }, '"stream" must be true or false, not 1'],
      [{ stream: null }, '"stream" must be true or false, not null'],
      [{ max_tokens: "64" }, '"max_tokens" must be a positive integer, not "64"'],
      [{ max_tokens: 0 }, '"max_tokens" must be a positive integer, not 0'],
      [{ messages: { role: "user", content: "hi" } }, '"messages" must be an array of objects, not {"role":"user","content":"hi"}'],
      [{ system: 5 }, '"system" must be a string or an array of content blocks (objects), not 5'],
      [{ stop_sequences: "END" }, '"stop_sequences" must be an array of strings, not "END"'],
      [{ temperature: "0.2" }, '"temperature" must be a number, not "0.2"'],
      [{ top_k: 1.5 }, '"top_k" must be a non-negative integer, not 1.5'],
      [{ tool_choice: "auto" }, '"tool_choice" must be an object, not "auto"'],
      [{ thinking: true }, '"thinking" must be an object, not true'],
      [{ metadata: "user-1" }, '"metadata" must be an object, not "user-1"'],
    ];

    it.each(wrong)("%j: 400 invalid_request_error naming the field, to every kind of backend", async (field, message) => {
      const marker = `msg-shape-${JSON.stringify(field)}`;
      for (const model of ["claude-native", "claude-chat", "claude-verbatim"]) {
        const response = await fetch(`${gw.url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model, max_tokens: 64, messages: [{ role: "user", content: marker }], ...field }),
        });
        expect({ model, status: response.status }).toEqual({ model, status: 400 });
        expect(await response.json()).toEqual({ type: "error", error: { type: "invalid_request_error", message, code: "invalid_request" } });
      }
      expect(backend.received.filter((r) => JSON.stringify(r.body).includes(marker))).toHaveLength(0);
    });

    it("a field twice is a 400 in the Messages shape too; the SDK raises a wrong type as a BadRequestError", async () => {
      const response = await fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"model":"claude-native","max_tokens":64,"messages":[{"role":"user","content":"msg-twice"}],"model":"claude-chat"}',
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        type: "error",
        error: { type: "invalid_request_error", message: 'the JSON body has the field "model" more than once; send each field once', code: "invalid_request" },
      });
      await expect(
        client.messages.create({
          model: "claude-native",
          max_tokens: 64,
          messages: [{ role: "user", content: "msg-shape-sdk" }],
          stream: "yes" as unknown as false,
        }),
      ).rejects.toBeInstanceOf(
        Anthropic.BadRequestError,
      );
      expect(backend.received.filter((r) => /msg-twice|msg-shape-sdk/.test(JSON.stringify(r.body)))).toHaveLength(0);
    });
  });

  it("answers the gateway's own errors in the Messages shape: unknown model 404, limits 429, a bad body 400", async () => {
    await expect(client.messages.create({ model: "no-such-model", max_tokens: 64, messages: [{ role: "user", content: "hi" }] })).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    // One request a minute per consumer: the second is refused.
    const consumer = { headers: { "x-consumer": "limited-one" }, maxRetries: 0 };
    await client.messages.create({ model: "claude-limited", max_tokens: 64, messages: [{ role: "user", content: "hi" }] }, consumer);
    await expect(client.messages.create({ model: "claude-limited", max_tokens: 64, messages: [{ role: "user", content: "hi" }] }, consumer)).rejects
      .toBeInstanceOf(
        Anthropic.RateLimitError,
      );
    const bad = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "claude-chat", max_tokens: 64 }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: expect.stringContaining('"messages" must be an array'), code: "invalid_request" },
    });
    const unknown = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "no-such-model", max_tokens: 1, messages: [] }),
    });
    expect(await unknown.json()).toEqual({
      type: "error",
      error: { type: "not_found_error", message: expect.stringContaining("no-such-model"), code: "model_not_found" },
    });
    // Chat-completions clients keep the chat-completions error shape.
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "no-such-model", messages: [] }),
    });
    expect(((await chat.json()) as Json).error).toMatchObject({ type: "not_found_error" });
  });
});
