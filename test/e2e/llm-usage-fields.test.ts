/**
 * Prompt-cache markers and the usage fields of every kind of LLM answer, as a user meets them:
 * a real gateway process (Node, or Deno when the suite runs on Deno) in front of the fake LLM
 * backends, on the embedded store and on the suite's redis-server (database 27, flushed when
 * the file starts). What is checked is what the backend received, what the client got, and
 * what was counted: the token budget, the usage record, the token metric.
 */
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CHAT_CACHED_TOKENS,
  CHAT_USAGE,
  EMBEDDINGS_PROMPT_TOKENS,
  type FakeBackend,
  MESSAGES_CACHE_COUNTS,
  MESSAGES_USAGE,
  startLlmBackend,
} from "../fixtures/llm-backends.ts";
import { flushRedisDb, kvStoreYaml } from "../support/stores-yaml.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";

const DB = 27;
const EPHEMERAL = { type: "ephemeral" };
/** What the Messages backend's `[cached]` answer amounts to in the chat format. */
const CACHED_PROMPT = MESSAGES_USAGE.input_tokens + MESSAGES_CACHE_COUNTS.cache_read_input_tokens + MESSAGES_CACHE_COUNTS.cache_creation_input_tokens;
/** Below one cached answer's tokens, above an uncached one's: the budget tells the two apart. */
const ASSISTANT_BUDGET = 1000;

type Json = Record<string, unknown>;
interface UsageView {
  usage: Array<{ service_type: string; total: { requests: number; tokens?: { prompt: number; completion: number } }; window?: { tokens?: number } }>;
}

let llm: FakeBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  await flushRedisDb(DB);
  llm = await startLlmBackend();
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((gw) => gw.kill()));
  await llm.stop();
});

function config(stores: string): string {
  return `
server:
  consumer_header: X-Consumer
${stores}
usage:
  retention: 24h
rate_limits:
  assistant:
    "*": { token_rate: ${ASSISTANT_BUDGET}, token_period: 1h }
  chat:
    "*": { token_rate: 100000, token_period: 1h }
  embeddings:
    "*": { token_rate: 100000, token_period: 1h }
services:
  - type: assistant
    model: claude
    provider: messages_api
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
  - type: chat
    model: gpt
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { chat: [/v1/chat/completions] }
  - type: embeddings
    model: embedder
    provider: chat_completions
    inference_url: ${llm.url}
    operations: { embed: [/v1/embeddings] }
`;
}

function post(gw: GatewayProcess, path: string, consumer: string, body: Json): Promise<Response> {
  return fetch(`${gw.url}${path}`, { method: "POST", headers: { "content-type": "application/json", "x-consumer": consumer }, body: JSON.stringify(body) });
}

async function usageOf(gw: GatewayProcess, consumer: string, type: string) {
  const response = await fetch(`${gw.url}/usage`, { headers: { "x-consumer": consumer } });
  return ((await response.json()) as UsageView).usage.find((u) => u.service_type === type);
}

/** The usage record once the answer's `llm.usage` event has been counted (it comes after the response). */
async function countedUsage(gw: GatewayProcess, consumer: string, type: string) {
  await waitUntil(async () => (await usageOf(gw, consumer, type))?.total.tokens !== undefined, 10_000, () => `tokens of ${consumer} (${type}) never counted`);
  return usageOf(gw, consumer, type);
}

describe.each(["memory", "redis"] as const)("usage fields on the %s store", (store) => {
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await startGateway(config(kvStoreYaml(store, DB)));
    running.push(gw);
  });

  it("messages_api: cache_control reaches the backend at each place; prompt_tokens and cached_tokens include the cache counts, and so does the budget", async () => {
    const consumer = `cache-${store}`;
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "test-key", maxRetries: 0, defaultHeaders: { "x-consumer": consumer } });
    const before = llm.calls("/v1/messages").length;
    // The chat-completions types know no cache_control: the official client sends it as given.
    const request = {
      model: "claude",
      messages: [
        { role: "system", content: [{ type: "text", text: "Long shared instructions", cache_control: EPHEMERAL }] },
        { role: "user", content: [{ type: "text", text: "A long document", cache_control: EPHEMERAL }, { type: "text", text: "[cached] question" }] },
      ],
      tools: [{ type: "function", function: { name: "lookup", parameters: { type: "object", properties: {} } }, cache_control: EPHEMERAL }],
    } as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;
    const answer = await client.chat.completions.create(request);

    const sent = llm.calls("/v1/messages").slice(before)[0]?.body as Json;
    expect(sent.system).toEqual([{ type: "text", text: "Long shared instructions", cache_control: EPHEMERAL }]);
    expect(sent.messages).toEqual([{
      role: "user",
      content: [{ type: "text", text: "A long document", cache_control: EPHEMERAL }, { type: "text", text: "[cached] question" }],
    }]);
    expect(sent.tools).toEqual([{ name: "lookup", input_schema: { type: "object", properties: {} }, cache_control: EPHEMERAL }]);

    expect(answer.usage).toEqual({
      prompt_tokens: CACHED_PROMPT,
      completion_tokens: MESSAGES_USAGE.output_tokens,
      total_tokens: CACHED_PROMPT + MESSAGES_USAGE.output_tokens,
      prompt_tokens_details: { cached_tokens: MESSAGES_CACHE_COUNTS.cache_read_input_tokens },
    });

    const usage = await countedUsage(gw, consumer, "assistant");
    expect(usage?.total.tokens).toEqual({ prompt: CACHED_PROMPT, completion: MESSAGES_USAGE.output_tokens });
    expect(usage?.window?.tokens).toBe(CACHED_PROMPT + MESSAGES_USAGE.output_tokens);
    // One cached answer is past the budget: the next request is refused.
    const refused = await post(gw, "/v1/chat/completions", consumer, { model: "claude", messages: [{ role: "user", content: "again" }] });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
      `used up: ${CACHED_PROMPT + MESSAGES_USAGE.output_tokens} of ${ASSISTANT_BUDGET} tokens`,
    );
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metricValue(metrics, "svc_llm_tokens_total", { service_type: "assistant", model: "claude", backend_model: "claude", user_type: "", type: "prompt" }))
      .toBeGreaterThanOrEqual(CACHED_PROMPT);
  });

  it("chat_completions: prompt_tokens_details pass through unchanged; prompt_tokens (cached included) is counted", async () => {
    const consumer = `openai-${store}`;
    const response = await post(gw, "/v1/chat/completions", consumer, { model: "gpt", messages: [{ role: "user", content: "[cached] hi" }] });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { usage: Json };
    expect(body.usage).toEqual({
      ...CHAT_USAGE,
      total_tokens: CHAT_USAGE.prompt_tokens + CHAT_USAGE.completion_tokens,
      prompt_tokens_details: { cached_tokens: CHAT_CACHED_TOKENS, audio_tokens: 0 },
    });
    const usage = await countedUsage(gw, consumer, "chat");
    expect(usage?.total.tokens).toEqual({ prompt: CHAT_USAGE.prompt_tokens, completion: CHAT_USAGE.completion_tokens });
  });

  it("embeddings: usage with prompt_tokens only counts as prompt tokens and zero completion tokens", async () => {
    const consumer = `embed-${store}`;
    const response = await post(gw, "/v1/embeddings", consumer, { model: "embedder", input: ["one", "two"] });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { usage: Json }).usage).toEqual({ prompt_tokens: EMBEDDINGS_PROMPT_TOKENS, total_tokens: EMBEDDINGS_PROMPT_TOKENS });
    const usage = await countedUsage(gw, consumer, "embeddings");
    expect(usage?.total.tokens).toEqual({ prompt: EMBEDDINGS_PROMPT_TOKENS, completion: 0 });
    expect(usage?.window?.tokens).toBe(EMBEDDINGS_PROMPT_TOKENS);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(
      metricValue(metrics, "svc_llm_tokens_total", { service_type: "embeddings", model: "embedder", backend_model: "embedder", user_type: "", type: "prompt" }),
    ).toBe(EMBEDDINGS_PROMPT_TOKENS);
  });
});
