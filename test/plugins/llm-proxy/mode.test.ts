/**
 * The LLM proxy mode in-process: the real sync-proxy, providers, cache and llm-proxy plugins
 * in one runtime, with an injected `fetch` standing in for the backends, to observe what the
 * e2e suite cannot see from outside (the `llm.usage` event, exact bytes, timeouts, tasks).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { LlmUsageEvent } from "../../../core/llm/usage.ts";
import { definePlugin, type PluginDefinition } from "../../../core/plugins/types.ts";
import llmProxy from "../../../plugins/llm-proxy/index.ts";
import providerChatCompletions, { chatCompletionsProvider } from "../../../plugins/provider-chat-completions/index.ts";
import providers from "../../../plugins/providers/index.ts";
import responseCache from "../../../plugins/response-cache/index.ts";
import syncProxy from "../../../plugins/sync-proxy/index.ts";
import { waitUntil } from "../../support/gateway-process.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

interface Sent {
  url: string;
  headers: Headers;
  bytes: Uint8Array;
}

const completion = (usage = true) =>
  JSON.stringify({
    id: "c",
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
    ...(usage ? { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } } : {}),
  });

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

const SERVICES = `
server:
  consumer_header: x-consumer
  user_type_header: x-user-type
  backend_timeout: 100ms
metrics:
  top_consumers: 1
services:
  - { type: chat, model: m, provider: chat_completions, inference_url: "http://backend.test", response_cache_ttl: 60, operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: bare, provider: chat_completions, inference_url: "http://backend.test/", operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: nousage, provider: chat_completions, inference_url: "http://nousage.test", operations: { chat: [/v1/chat/completions] } }
  - { type: chat, model: slow, provider: chat_completions, inference_url: "http://slow.test", operations: { chat: [/v1/chat/completions] } }
`;
const UNKNOWN_PROVIDER = `
  - { type: chat, model: mystery, provider: not_installed, inference_url: "http://backend.test", operations: { chat: [/v1/chat/completions] } }
`;

async function setUp(extraPlugins: PluginDefinition[] = [], extraServices = "") {
  const sent: Sent[] = [];
  const events: LlmUsageEvent[] = [];
  const backendAborts: string[] = [];
  const fakeFetch: typeof fetch = async (input, init) => {
    const url = String(input);
    sent.push({ url, headers: new Headers(init?.headers), bytes: new Uint8Array(init?.body as ArrayBuffer) });
    init?.signal?.addEventListener("abort", () => backendAborts.push(url));
    if (url.startsWith("http://slow.test")) {
      // Answers only when aborted: the gateway's timeout must fire.
      return await new Promise<Response>((_, reject) => init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
    }
    if (url.startsWith("http://nousage.test")) return new Response(completion(false), { headers: { "content-type": "application/json" } });
    const body = JSON.parse(new TextDecoder().decode(init?.body as Uint8Array)) as Record<string, unknown>;
    if (body.stream === true) return new Response('data: {"x":1}\n\ndata: [DONE]\n\n', { headers: { "content-type": "text/event-stream" } });
    return new Response(completion(), { headers: { "content-type": "application/json" } });
  };
  const listener = definePlugin({ name: "usage-listener", setup: (api) => api.on("llm.usage", (event) => events.push(event)) });
  const started = await startTestRuntime(SERVICES + extraServices, [
    syncProxy,
    providers,
    providerChatCompletions,
    responseCache,
    llmProxy,
    listener,
    ...extraPlugins,
  ], { fetch: fakeFetch });
  runtimes.push(started);
  const { runtime, metrics } = started;
  const call = (body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) =>
    runtime.handle(
      new Request("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
        signal,
      }),
    );
  return { runtime, sent, events, metrics, call, backendAborts };
}

describe("llm-proxy mode", () => {
  it("emits llm.usage after a response with usage; counted is false under Cache-Control: no-cache", async () => {
    const { call, events } = await setUp();
    await (await call({ model: "bare", messages: [] }, { "x-consumer": "ann", "x-user-type": "pro" })).text();
    await (await call({ model: "bare", messages: [] }, { "cache-control": "no-cache" })).text();
    expect(events).toEqual([
      {
        serviceType: "chat",
        model: "bare",
        backendModel: "bare",
        consumer: "ann",
        userType: "pro",
        prompt: 3,
        completion: 2,
        cached: 0,
        cacheCreation: 0,
        counted: true,
        origin: "client",
      },
      {
        serviceType: "chat",
        model: "bare",
        backendModel: "bare",
        consumer: "",
        userType: "",
        prompt: 3,
        completion: 2,
        cached: 0,
        cacheCreation: 0,
        counted: false,
        origin: "client",
      },
    ]);
  });

  it("emits nothing for streams, usage-less answers and cache hits", async () => {
    const { call, events } = await setUp();
    await (await call({ model: "bare", stream: true, messages: [] })).text();
    await (await call({ model: "nousage", messages: [] })).text();
    await (await call({ model: "m", messages: [{ role: "user", content: "hit me" }] })).text();
    expect(events).toHaveLength(1);
    const hit = await call({ model: "m", messages: [{ role: "user", content: "hit me" }] });
    expect(hit.headers.get("x-cache")).toBe("HIT");
    await hit.text();
    expect(events).toHaveLength(1);
  });

  it("sends the client's exact bytes when nothing needs changing, and injects include_usage on streams", async () => {
    const { call, sent } = await setUp();
    const raw = '{"model":"bare",  "messages":[] }';
    await (await call(raw)).text();
    expect(new TextDecoder().decode(sent[0].bytes)).toBe(raw);
    expect(sent[0].url).toBe("http://backend.test/v1/chat/completions");
    expect(sent[0].headers.get("content-type")).toBe("application/json");
    await (await call({ model: "bare", stream: true, stream_options: { other: 1 }, messages: [] })).text();
    expect(JSON.parse(new TextDecoder().decode(sent[1].bytes))).toMatchObject({ stream_options: { other: 1, include_usage: true } });
  });

  it("answers 504 when the backend sends no headers within server.backend_timeout", async () => {
    const { call, metrics } = await setUp();
    const response = await call({ model: "slow", messages: [] });
    expect(response.status).toBe(504);
    expect(((await response.json()) as { error: { type: string; message: string } }).error).toMatchObject({ type: "timeout_error" });
    expect(await metrics.text()).toMatch(/svc_llm_requests_total\{[^}]*model="slow"[^}]*status="504"\} 1/);
  });

  it("aborts the backend request when the client goes away", async () => {
    const { call, sent, backendAborts } = await setUp();
    const client = new AbortController();
    const answered = call({ model: "slow", messages: [] }, {}, client.signal);
    await waitUntil(() => sent.length === 1);
    client.abort();
    expect((await answered).status).toBe(499);
    expect(backendAborts).toEqual(["http://slow.test/v1/chat/completions"]);
  });

  it("refuses to set up when a service names a provider no plugin registered, naming the registered ones", async () => {
    await expect(setUp([], UNKNOWN_PROVIDER)).rejects.toThrow(
      'services[4].provider: "not_installed" (model "mystery") is not a provider any plugin registered (registered providers: azure_openai, chat_completions, deepseek, fireworks, groq, mistral, ollama, openai, openrouter, together, vllm)',
    );
  });

  it("refuses a second provider with the same name at setup", async () => {
    const duplicate = definePlugin({ name: "dup", dependsOn: ["providers"], setup: (api) => api.use("providers").register(chatCompletionsProvider) });
    await expect(setUp([duplicate])).rejects.toThrow('LLM provider "chat_completions" is registered twice');
  });

  it("publishes the top consumers from the store when its task runs", async () => {
    const { runtime, call, metrics } = await setUp();
    await (await call({ model: "bare", messages: [] }, { "x-consumer": "ann", "x-user-type": "pro" })).text();
    await (await call({ model: "bare", messages: [] }, { "x-consumer": "ann", "x-user-type": "pro" })).text();
    await (await call({ model: "bare", messages: [] }, { "x-consumer": "bo" })).text();
    // The counts are added without delaying the response; the task reads whatever has landed.
    const kv = runtime.deps.kv;
    await waitUntil(async () => Object.keys(await kv.hgetall("llm:consumer_tokens")).length === 4);
    expect(await kv.hgetall("llm:consumer_tokens")).toEqual({
      '["ann","pro","prompt"]': "6",
      '["ann","pro","completion"]': "4",
      '["bo","","prompt"]': "3",
      '["bo","","completion"]': "2",
    });
    await runtime.runTaskNow("llm-consumer-tokens-top");
    const text = await metrics.text();
    expect(text).toContain('svc_llm_consumer_tokens_top{consumer="ann",user_type="pro",type="prompt"} 6');
    expect(text).toContain('svc_llm_consumer_tokens_top{consumer="ann",user_type="pro",type="completion"} 4');
    expect(text).not.toContain('consumer="bo"');
  });
});
