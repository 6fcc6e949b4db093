/**
 * The translators, URL builders and auth headers against the fake Google backend
 * (test/fixtures/gemini-backend.ts), wired the way the LLM proxy will wire them: translate the
 * chat request, build the URL for the backend model, add the auth headers, send, translate the
 * answer, the stream or the error back. The fake checks the body as Google does (unknown fields,
 * roles, parts, thought signatures on Gemini 3, Vertex's Messages differences) and the key or token.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../../core/clock.ts";
import { type JsonObject, type OutEvent, parseJson, type ProviderDefinition, type TranslatorContext } from "../../../core/llm/provider.ts";
import { SseParser } from "../../../core/llm/sse.ts";
import {
  type BackendAuth,
  createVertexAiProvider,
  geminiBackendAuth,
  geminiBackendUrl,
  geminiProvider,
  type GoogleBackendSettings,
  isContextWindowError,
  PromptBlockedError,
  retryAfterOf,
  vertexBackendAuth,
  vertexBackendUrl,
} from "../../../plugins/provider-gemini/index.ts";
import { GEMINI_USAGE, RETRY_DELAY, THOUGHT_SIGNATURE, TOO_LONG_MESSAGE, TOOL_ARGS } from "../../fixtures/gemini-answers.ts";
import { type FakeGoogle, startGeminiBackend } from "../../fixtures/gemini-backend.ts";
import { createServiceAccount } from "../../fixtures/google-oauth.ts";
import { CLAUDE_USAGE, PROMPT_TOO_LONG_MESSAGE } from "../../fixtures/vertex-claude-answers.ts";
import { messagesApiProvider } from "../../../plugins/provider-messages-api/index.ts";

const vertexAiProvider = createVertexAiProvider(messagesApiProvider, { clock: { now: () => Date.now() } });

const context: TranslatorContext = { stream: false, now: () => Date.UTC(2026, 0, 1), newId: () => crypto.randomUUID() };

interface Target {
  provider: ProviderDefinition;
  url(model: string, stream: boolean): string;
  auth: BackendAuth;
}

interface Outcome {
  status: number;
  body?: JsonObject;
  events?: OutEvent[];
  ended?: boolean;
  /** The Retry-After the client would get. */
  retryAfter?: string;
  /** The raw error body, for the fallback check. */
  raw?: unknown;
}

/** One chat request through `target`, as the LLM proxy will send it. */
async function send(target: Target, model: string, chat: JsonObject): Promise<Outcome> {
  const stream = chat.stream === true;
  const translator = target.provider.createTranslator({ ...context, stream });
  const body = translator.translateRequest?.({ ...chat, model }) ?? chat;
  const response = await fetch(target.url(model, stream), {
    method: "POST",
    headers: { ...(await target.auth.headers()), "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (response.status >= 300) {
    const raw = parseJson(await response.text());
    return { status: response.status, body: translator.translateError?.(response.status, raw), retryAfter: retryAfterOf(raw), raw };
  }
  if (!stream) return { status: response.status, body: translator.translateResponse?.(await response.json())?.body };
  expect(response.headers.get("content-type")).toBe("text/event-stream");
  const parser = new SseParser();
  const events: OutEvent[] = [];
  const decoder = new TextDecoder();
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    for (const event of parser.push(decoder.decode(chunk.value, { stream: true }))) events.push(...(translator.translateStreamEvent?.(event) ?? []));
  }
  for (const event of parser.end()) events.push(...(translator.translateStreamEvent?.(event) ?? []));
  const ended = translator.streamProgress?.().ended ?? false;
  if (ended) events.push(...(translator.translateStreamEnd?.() ?? []));
  return { status: response.status, events, ended };
}

/** The text and tool calls a client assembles from a chat stream. */
function assembled(events: OutEvent[]): { text: string; finish: unknown[]; toolNames: string[]; usage: unknown; done: boolean } {
  const chunks = events.map((e) => e.data).filter((d): d is JsonObject => typeof d === "object" && d !== null);
  const choices = chunks.flatMap((c) => (Array.isArray(c.choices) ? (c.choices as JsonObject[]) : []));
  const deltas = choices.map((c) => c.delta as JsonObject);
  return {
    text: deltas.map((d) => (typeof d.content === "string" ? d.content : "")).join(""),
    finish: choices.map((c) => c.finish_reason).filter((f) => f !== null),
    toolNames: deltas.flatMap((d) => (Array.isArray(d.tool_calls) ? (d.tool_calls as JsonObject[]) : [])).map((t) => String((t.function as JsonObject).name)),
    usage: chunks.find((c) => c.usage !== undefined)?.usage,
    done: events.some((e) => e.data === "[DONE]"),
  };
}

const user = (content: string) => ({ role: "user", content });
const weatherTool = { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } };

let google: FakeGoogle;
let dir: string;
let studio: Target;
let vertex: Target;

beforeAll(async () => {
  google = await startGeminiBackend({ apiKey: "studio-key", project: "proj-1", location: "europe-west4", vertexApiKey: "express-key" });
  const account = createServiceAccount(google.tokenUri);
  google.addServiceAccount(account);
  dir = mkdtempSync(join(tmpdir(), "vertex-round-trip-"));
  writeFileSync(join(dir, "key.json"), JSON.stringify(account.keyFile));
  const studioSettings: GoogleBackendSettings = { url: google.url, api_key: "studio-key" };
  studio = { provider: geminiProvider, url: (model, stream) => geminiBackendUrl(studioSettings, model, stream), auth: geminiBackendAuth(studioSettings) };
  const vertexSettings: GoogleBackendSettings = { url: google.url, project: "proj-1", location: "europe-west4", credentials_file: join(dir, "key.json") };
  vertex = {
    provider: vertexAiProvider,
    url: (model, stream) => vertexBackendUrl(vertexSettings, model, stream),
    auth: vertexBackendAuth(vertexSettings, { clock: new ManualClock() }),
  };
});

afterAll(async () => {
  await google.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("gemini (Google AI Studio) against the fake", () => {
  it("answers a plain request, with the key in x-goog-api-key and nothing Gemini would refuse in the body", async () => {
    const out = await send(studio, "gemini-2.5-flash", { messages: [{ role: "system", content: "Be brief." }, user("hi")], max_tokens: 50, temperature: 0.1 });
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({
      object: "chat.completion",
      model: "gemini-2.5-flash",
      choices: [{ index: 0, message: { role: "assistant", content: "echo: hi" }, finish_reason: "stop" }],
      usage: { prompt_tokens: GEMINI_USAGE.promptTokenCount, completion_tokens: GEMINI_USAGE.candidatesTokenCount },
    });
    const call = google.modelCalls().at(-1);
    expect(call?.path).toBe("/v1beta/models/gemini-2.5-flash:generateContent");
    expect(call?.headers["x-goog-api-key"]).toBe("studio-key");
    expect(call?.body).toEqual({
      contents: [{ role: "user", parts: [{ text: "hi" }] }],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      generationConfig: { maxOutputTokens: 50, temperature: 0.1 },
    });
  });

  it("streams with alt=sse: the text, one finish, the usage chunk and [DONE]", async () => {
    const out = await send(studio, "gemini-2.5-flash", {
      messages: [user("stream me [cached] [thinking]")],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(google.modelCalls().at(-1)?.query).toEqual({ alt: "sse" });
    expect(out.ended).toBe(true);
    const got = assembled(out.events ?? []);
    expect(got).toEqual({
      text: "echo: stream me [cached] [thinking]",
      finish: ["stop"],
      toolNames: [],
      usage: {
        prompt_tokens: 13,
        completion_tokens: 10,
        total_tokens: 23,
        prompt_tokens_details: { cached_tokens: 8 },
        completion_tokens_details: { reasoning_tokens: 4 },
      },
      done: true,
    });
  });

  it("calls a tool, then takes its result back on Gemini 3, which checks the thought signature came back", async () => {
    const first = await send(studio, "gemini-3-pro-preview", { messages: [user("weather? [tool]")], tools: [weatherTool], tool_choice: "auto" });
    const message = (first.body?.choices as JsonObject[])[0].message as JsonObject;
    const calls = message.tool_calls as JsonObject[];
    expect(calls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        type: "function",
        function: { name: "get_weather", arguments: JSON.stringify(TOOL_ARGS) },
        extra_content: { google: { thought_signature: THOUGHT_SIGNATURE } },
      },
    ]);
    const history = [user("weather? [tool]"), message, { role: "tool", tool_call_id: calls[0].id, content: '{"temp":21}' }];
    const second = await send(studio, "gemini-3-pro-preview", { messages: history, tools: [weatherTool] });
    expect(second.status).toBe(200);
    expect((second.body?.choices as JsonObject[])[0].message).toEqual({ role: "assistant", content: 'result: {"temp":21}' });
    // A client that dropped extra_content: the placeholder signature keeps Gemini 3 answering.
    const dropped = [user("weather? [tool]"), { ...message, tool_calls: calls.map(({ extra_content: _, ...call }) => call) }, history[2]];
    expect((await send(studio, "gemini-3-pro-preview", { messages: dropped, tools: [weatherTool] })).status).toBe(200);
  });

  it("streams a tool call", async () => {
    const out = await send(studio, "gemini-2.5-flash", { messages: [user("[tool]")], tools: [weatherTool], stream: true });
    const got = assembled(out.events ?? []);
    expect(got.toolNames).toEqual(["get_weather"]);
    expect(got.finish).toEqual(["tool_calls"]);
    expect(got.done).toBe(true);
  });

  it("a 429 with RetryInfo becomes rate_limit_error with a Retry-After, plain and streamed", async () => {
    for (const stream of [false, true]) {
      const out = await send(studio, "gemini-2.5-flash", { messages: [user("[status:429]")], stream });
      expect(out.status).toBe(429);
      expect(out.body).toEqual({
        error: {
          message: "You exceeded your current quota, please check your plan and billing details.",
          type: "rate_limit_error",
          code: "RESOURCE_EXHAUSTED",
        },
      });
      expect(out.retryAfter).toBe(RETRY_DELAY.replace("s", ""));
    }
  });

  it("a prompt over the context window is a 400 context_length_exceeded the fallback can recognise", async () => {
    const out = await send(studio, "gemini-2.5-flash", { messages: [user("[too-long]")] });
    expect(out.status).toBe(400);
    expect(out.body).toEqual({ error: { message: TOO_LONG_MESSAGE, type: "invalid_request_error", code: "context_length_exceeded" } });
    expect(isContextWindowError(out.status, out.raw)).toBe(true);
  });

  it("a prompt blocked for safety is an error, plain and streamed; a filtered answer is content_filter", async () => {
    await expect(send(studio, "gemini-2.5-flash", { messages: [user("[blocked]")] })).rejects.toBeInstanceOf(PromptBlockedError);
    const streamed = await send(studio, "gemini-2.5-flash", { messages: [user("[blocked]")], stream: true });
    expect(streamed.ended).toBe(true);
    expect(streamed.events?.map((e) => e.data)).toEqual([
      expect.objectContaining({ error: expect.objectContaining({ code: "content_filter", type: "invalid_request_error" }) }),
    ]);
    const filtered = await send(studio, "gemini-2.5-flash", { messages: [user("[safety]")] });
    expect((filtered.body?.choices as JsonObject[])[0]).toMatchObject({ message: { content: "I can" }, finish_reason: "content_filter" });
  });

  it("a stream cut before its finish reason is not ended (the gateway then ends it with an error event)", async () => {
    const out = await send(studio, "gemini-2.5-flash", { messages: [user("[cut]")], stream: true });
    expect(out.ended).toBe(false);
  });

  it("a wrong key is Google's 400 API_KEY_INVALID, translated", async () => {
    const wrong: Target = { ...studio, auth: geminiBackendAuth({ api_key: "nope" }) };
    const out = await send(wrong, "gemini-2.5-flash", { messages: [user("hi")] });
    expect(out.status).toBe(400);
    expect(out.body).toEqual({
      error: { message: "API key not valid. Please pass a valid API key.", type: "invalid_request_error", code: "INVALID_ARGUMENT" },
    });
  });

  it("answers n candidates as n choices", async () => {
    const out = await send(studio, "gemini-2.5-flash", { messages: [user("hi")], n: 2 });
    expect((out.body?.choices as JsonObject[]).map((c) => [c.index, (c.message as JsonObject).content])).toEqual([
      [0, "echo: hi"],
      [1, "echo: hi #1"],
    ]);
  });
});

describe("vertex_ai against the fake", () => {
  it("answers Gemini with an OAuth token from the service-account key, plain and streamed", async () => {
    const plain = await send(vertex, "gemini-2.5-pro", { messages: [user("hi")] });
    expect(plain.status).toBe(200);
    expect((plain.body?.choices as JsonObject[])[0].message).toEqual({ role: "assistant", content: "echo: hi" });
    const call = google.modelCalls().at(-1);
    expect(call?.path).toBe("/v1/projects/proj-1/locations/europe-west4/publishers/google/models/gemini-2.5-pro:generateContent");
    expect(call?.headers.authorization).toMatch(/^Bearer ya29\.fake-token-\d+$/);
    const streamed = await send(vertex, "gemini-2.5-pro", { messages: [user("hi")], stream: true });
    expect(assembled(streamed.events ?? []).text).toBe("echo: hi");
    expect(google.tokenGrants).toBe(1);
  });

  it("answers a Claude model through the Messages API at rawPredict, version in the body and no model, plain and streamed", async () => {
    const plain = await send(vertex, "claude-sonnet-4@20250514", { messages: [{ role: "system", content: "Be brief." }, user("hi")], max_tokens: 64 });
    expect(plain.status).toBe(200);
    expect(plain.body).toMatchObject({
      choices: [{ message: { role: "assistant", content: "echo: hi" }, finish_reason: "stop" }],
      usage: { prompt_tokens: CLAUDE_USAGE.input_tokens, completion_tokens: CLAUDE_USAGE.output_tokens },
    });
    const call = google.modelCalls().at(-1);
    expect(call?.path).toBe("/v1/projects/proj-1/locations/europe-west4/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict");
    expect(call?.body).toEqual({ anthropic_version: "vertex-2023-10-16", system: "Be brief.", messages: [{ role: "user", content: "hi" }], max_tokens: 64 });
    const streamed = await send(vertex, "claude-sonnet-4@20250514", { messages: [user("hi")], stream: true, stream_options: { include_usage: true } });
    expect(google.modelCalls().at(-1)?.path).toMatch(/:streamRawPredict$/);
    expect(streamed.ended).toBe(true);
    expect(assembled(streamed.events ?? [])).toMatchObject({
      text: "echo: hi",
      finish: ["stop"],
      done: true,
      usage: { prompt_tokens: 12, completion_tokens: 5 },
    });
  });

  it("translates Vertex's own 429 and Anthropic's prompt-too-long for a Claude model", async () => {
    const quota = await send(vertex, "claude-sonnet-4@20250514", { messages: [user("[status:429]")] });
    expect(quota.status).toBe(429);
    expect(quota.body).toMatchObject({ error: { type: "rate_limit_error", code: "RESOURCE_EXHAUSTED" } });
    const long = await send(vertex, "claude-sonnet-4@20250514", { messages: [user("[too-long]")] });
    expect(long.status).toBe(400);
    expect(long.body).toEqual({ error: { message: PROMPT_TOO_LONG_MESSAGE, type: "invalid_request_error" } });
    expect(isContextWindowError(long.status, long.raw)).toBe(true);
  });

  it("express mode: an API key and no project", async () => {
    const settings: GoogleBackendSettings = { url: google.url, api_key: "express-key" };
    const express: Target = {
      provider: vertexAiProvider,
      url: (model, stream) => vertexBackendUrl(settings, model, stream),
      auth: vertexBackendAuth(settings, { clock: new ManualClock() }),
    };
    const out = await send(express, "gemini-2.5-flash", { messages: [user("hi")] });
    expect(out.status).toBe(200);
    expect(google.modelCalls().at(-1)?.path).toBe("/v1/publishers/google/models/gemini-2.5-flash:generateContent");
  });

  it("another project is refused by Vertex: 403 PERMISSION_DENIED, translated", async () => {
    const settings: GoogleBackendSettings = { url: google.url, project: "someone-elses", location: "europe-west4", credentials_file: join(dir, "key.json") };
    const other: Target = { provider: vertexAiProvider, url: (model, stream) => vertexBackendUrl(settings, model, stream), auth: vertex.auth };
    const out = await send(other, "gemini-2.5-pro", { messages: [user("hi")] });
    expect(out.status).toBe(403);
    expect(out.body).toMatchObject({ error: { type: "permission_error", code: "PERMISSION_DENIED" } });
  });
});
