/**
 * The provider's pieces together against the fake Bedrock, as the LLM proxy will drive them:
 * translate the chat request, build the URL and sign it, send it, then translate the answer,
 * the binary stream (decoded as it arrives, cut anywhere) or the error.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject, OutEvent, TokenUsage, TranslatorContext } from "../../../core/llm/provider.ts";
import {
  bedrockProvider,
  EVENT_STREAM_CONTENT_TYPE,
  EventStreamDecoder,
  isContextWindowError,
  prepareBedrockRequest,
} from "../../../plugins/provider-bedrock/index.ts";
import {
  BEDROCK_TEST_CREDENTIALS,
  BEDROCK_TEST_REGION,
  CONVERSE_TEXT,
  type FakeBedrock,
  startBedrockBackend,
  THROTTLING_MESSAGE,
  TOO_LONG_MESSAGE,
  TOOL_INPUT,
} from "../../fixtures/bedrock-backend.ts";

const MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0";
const TOOLS = [{
  type: "function",
  function: { name: "weather", description: "The weather in a city", parameters: { type: "object", properties: { city: { type: "string" } } } },
}];

let fake: FakeBedrock;
beforeAll(async () => {
  // Streams are written 37 bytes at a time: frames arrive cut anywhere.
  fake = await startBedrockBackend({ chunkBytes: 37 });
});
afterAll(() => fake.stop());

async function call(chat: JsonObject) {
  const stream = chat.stream === true;
  const context: TranslatorContext = { stream, now: () => Date.UTC(2026, 0, 1), newId: () => "id-1" };
  const translator = bedrockProvider.createTranslator(context);
  const bytes = new TextEncoder().encode(JSON.stringify(translator.translateRequest({ model: MODEL, ...chat })));
  const { url, headers } = await prepareBedrockRequest({
    settings: { region: BEDROCK_TEST_REGION, url: fake.url, credentials: BEDROCK_TEST_CREDENTIALS },
    modelId: MODEL,
    stream,
    body: bytes,
    headers: {},
  });
  const response = await fetch(url, { method: "POST", headers, body: bytes });
  return { response, translator };
}

interface Completed {
  status: number;
  /** The backend's body as received. */
  raw: unknown;
  /** Translated: the chat answer and its usage, or the chat error. */
  body?: JsonObject;
  usage?: TokenUsage;
  error?: JsonObject;
}

async function complete(chat: JsonObject): Promise<Completed> {
  const { response, translator } = await call(chat);
  const json: unknown = await response.json();
  // The answer's headers name the Bedrock error (x-amzn-ErrorType).
  if (response.status !== 200) return { status: response.status, raw: json, error: translator.translateError(response.status, json, response.headers) };
  return { status: 200, raw: json, ...translator.translateResponse(json) };
}

async function streamed(chat: JsonObject) {
  const { response, translator } = await call({ ...chat, stream: true });
  expect(response.headers.get("content-type")).toBe(EVENT_STREAM_CONTENT_TYPE);
  const decoder = new EventStreamDecoder();
  const out: OutEvent[] = [];
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    const events = done ? decoder.end() : decoder.push(value);
    for (const event of events) out.push(...translator.translateStreamEvent(event));
    if (done) break;
  }
  out.push(...translator.translateStreamEnd());
  return { out, progress: translator.streamProgress() };
}

const contentOf = (out: OutEvent[]) =>
  out
    .map((
      e,
    ) => (typeof e.data === "object" && e.data !== null ? (e.data as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content ?? "" : ""))
    .join("");

describe("bedrock round trip against the fake", () => {
  it("answers a plain request, the body on the wire being the translated one", async () => {
    const answer = await complete({ messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }], max_tokens: 64 });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ model: MODEL, choices: [{ message: { role: "assistant", content: CONVERSE_TEXT }, finish_reason: "stop" }] });
    expect(answer.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5 });
    const request = fake.calls("converse").at(-1)!;
    expect(request.body).toEqual({
      system: [{ text: "Be brief." }],
      messages: [{ role: "user", content: [{ text: "hi" }] }],
      inferenceConfig: { maxTokens: 64 },
    });
  });

  it("streams text and usage from the binary event stream", async () => {
    const { out, progress } = await streamed({ messages: [{ role: "user", content: "hi [cached]" }], stream_options: { include_usage: true } });
    expect(contentOf(out)).toBe(CONVERSE_TEXT);
    expect(out.at(-1)).toEqual({ data: "[DONE]" });
    expect(out.at(-2)).toMatchObject({
      data: { usage: { prompt_tokens: 2312, completion_tokens: 5, total_tokens: 2317, prompt_tokens_details: { cached_tokens: 2000 } } },
    });
    expect(progress).toEqual({ ended: true, usage: { prompt_tokens: 2312, completion_tokens: 5, cached_tokens: 2000, cache_creation_tokens: 300 } });
    expect(fake.calls("converse-stream").at(-1)).toMatchObject({ auth: "sigv4", status: 200 });
  });

  it("calls a tool and answers from its result, plain and streamed", async () => {
    const first = await complete({ messages: [{ role: "user", content: "weather in Paris? [tool]" }], tools: TOOLS });
    const message =
      (first.body as unknown as { choices: { message: { tool_calls: { id: string; function: { name: string; arguments: string } }[] } }[] }).choices[0].message;
    expect(message.tool_calls).toEqual([{ id: "tooluse_fake_1", type: "function", function: { name: "weather", arguments: JSON.stringify(TOOL_INPUT) } }]);
    const second = await complete({
      messages: [{ role: "user", content: "weather in Paris? [tool]" }, { role: "assistant", content: null, tool_calls: message.tool_calls }, {
        role: "tool",
        tool_call_id: "tooluse_fake_1",
        content: "sunny",
      }],
      tools: TOOLS,
    });
    expect(second.body).toMatchObject({ choices: [{ message: { content: "result: sunny" }, finish_reason: "stop" }] });

    const { out } = await streamed({ messages: [{ role: "user", content: "weather? [tool]" }], tools: TOOLS });
    const args = out.flatMap((e) =>
      ((e.data as { choices?: { delta?: { tool_calls?: { function: { arguments: string } }[] } }[] }).choices?.[0]?.delta?.tool_calls ?? []).map((c) =>
        c.function.arguments
      )
    ).join("");
    expect(JSON.parse(args)).toEqual(TOOL_INPUT);
    expect(out.at(-2)).toMatchObject({ data: { choices: [{ finish_reason: "tool_calls" }] } });
  });

  it("maps throttling to a 429 rate_limit_error and a too-long prompt to a recognisable context-window error", async () => {
    const throttled = await complete({ messages: [{ role: "user", content: "hi [throttle]" }] });
    expect(throttled.status).toBe(429);
    expect(throttled.error).toEqual({
      error: { message: `${THROTTLING_MESSAGE} (Bedrock ThrottlingException)`, type: "rate_limit_error", code: "ThrottlingException" },
    });
    expect(isContextWindowError(throttled.status, throttled.raw)).toBe(false);

    const tooLong = await complete({ messages: [{ role: "user", content: "hi [too-long]" }] });
    expect(tooLong.status).toBe(400);
    expect(tooLong.error).toEqual({
      error: { message: `${TOO_LONG_MESSAGE} (Bedrock ValidationException)`, type: "invalid_request_error", code: "context_length_exceeded" },
    });
    expect(isContextWindowError(tooLong.status, tooLong.raw)).toBe(true);
    expect(isContextWindowError(tooLong.status, tooLong.error)).toBe(true);
  });

  it("ends a stream that Bedrock breaks off with an exception with one error event", async () => {
    const { out, progress } = await streamed({ messages: [{ role: "user", content: "hi [stream-throttle]" }] });
    expect(out.at(-1)).toEqual({
      data: { error: { message: `${THROTTLING_MESSAGE} (Bedrock ThrottlingException)`, type: "rate_limit_error", code: "ThrottlingException" } },
    });
    expect(out.some((e) => e.data === "[DONE]")).toBe(false);
    expect(progress.ended).toBe(true);
  });

  it("the fake refuses what Converse refuses, so a translation mistake shows", async () => {
    const { url, headers } = await prepareBedrockRequest({
      settings: { region: BEDROCK_TEST_REGION, url: fake.url, credentials: BEDROCK_TEST_CREDENTIALS },
      modelId: MODEL,
      stream: false,
      body: new TextEncoder().encode(JSON.stringify({ model: MODEL, messages: [{ role: "user", content: [{ text: "hi" }] }] })),
      headers: {},
    });
    const response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: [{ text: "hi" }] }] }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      message: "Malformed input request: extraneous key [model] is not permitted, please reformat your input and try again.",
    });
    const alternating = await complete({ messages: [{ role: "assistant", content: "first" }, { role: "user", content: "hi" }] });
    expect(alternating.error).toMatchObject({
      error: {
        message: "A conversation must start with a user message. Try again with a conversation that starts with a user message. (Bedrock ValidationException)",
      },
    });
  });
});
