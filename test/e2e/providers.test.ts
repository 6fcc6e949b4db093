/**
 * The providers by the names people type, as a user meets them: a real gateway process in front
 * of fakes that speak each provider's protocol (Bedrock's Converse and binary ConverseStream,
 * checking SigV4 signatures or a Bedrock API key; Google's Gemini API with its key and Vertex AI
 * with OAuth tokens it issued to a service account, Anthropic's models on it through rawPredict;
 * Chat Completions and Messages), reached through the official `openai` and `@anthropic-ai/sdk`
 * clients with only their base URL changed. Then what mixing them buys: one model whose
 * backends speak different protocols, model fallbacks and context-window fallbacks (a hidden one
 * skipped), `X-Gateway-Model` and `svc_llm_fallbacks_total`, and the providers' throttling as a
 * 429 with `Retry-After` where the provider gives one.
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayProcess, startGateway } from "../support/gateway-process.ts";
import {
  BEDROCK_TEST_API_KEY,
  BEDROCK_TEST_CREDENTIALS,
  BEDROCK_TEST_REGION,
  CONVERSE_TEXT,
  CONVERSE_USAGE,
  type FakeBedrock,
  startBedrockBackend,
  TOOL_INPUT,
} from "../fixtures/bedrock-backend.ts";
import { type FakeGoogle, startGeminiBackend } from "../fixtures/gemini-backend.ts";
import { GEMINI_USAGE, RETRY_DELAY, TOOL_ARGS } from "../fixtures/gemini-answers.ts";
import { createServiceAccount } from "../fixtures/google-oauth.ts";
import { CLAUDE_USAGE } from "../fixtures/vertex-claude-answers.ts";
import { type FakeBackend, MESSAGES_USAGE, startLlmBackend } from "../fixtures/llm-backends.ts";
import { metricSum } from "../support/prometheus.ts";

type Json = Record<string, unknown>;

const BEDROCK_MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0";
/** How the model id travels in a Bedrock path (the SDKs encode `:`). */
const BEDROCK_MODEL_PATH = "anthropic.claude-3-5-haiku-20241022-v1%3A0";
const GEMINI_KEY = "test-gemini-key";
const ANTHROPIC_KEY = "sk-ant-test";

const WEATHER_TOOL: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] },
  },
};

/** The sum of a series' samples whose labels include `labels` (test/support/prometheus.ts). */
async function metric(gw: GatewayProcess, name: string, labels: Record<string, string>): Promise<number> {
  return metricSum(await (await fetch(`${gw.url}/metrics`)).text(), name, labels);
}

const user = (content: string): OpenAI.Chat.Completions.ChatCompletionMessageParam => ({ role: "user", content });

/** A streamed chat completion read whole: its text, finish reason, tool calls' names and arguments, and the response's headers. */
async function streamed(client: OpenAI, params: Omit<OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming, "stream">) {
  const { data: stream, response } = await client.chat.completions.create({ ...params, stream: true }).withResponse();
  let text = "";
  let finish: string | null = null;
  const tools: Array<{ name: string; arguments: string }> = [];
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    if (!choice) continue;
    text += choice.delta.content ?? "";
    for (const call of choice.delta.tool_calls ?? []) {
      tools[call.index] ??= { name: "", arguments: "" };
      tools[call.index].name += call.function?.name ?? "";
      tools[call.index].arguments += call.function?.arguments ?? "";
    }
    finish = choice.finish_reason ?? finish;
  }
  return { text, finish, tools, headers: response.headers };
}

/** The text blocks of a Messages answer, joined. */
const textOf = (content: Anthropic.ContentBlock[]) => content.map((block) => (block.type === "text" ? block.text : "")).join("");

describe("providers by name, and fallback across them", () => {
  let bedrock: FakeBedrock;
  let throttledBedrock: FakeBedrock;
  let google: FakeGoogle;
  let throttledGoogle: FakeGoogle;
  /** Chat Completions and Messages answers. */
  let llm: FakeBackend;
  /** A visible-only-to-staff model's backend. */
  let staffOnly: FakeBackend;
  /** OpenAI-style backends answering 503, one per model so one's health does not touch another's. */
  let down: FakeBackend[];
  let gw: GatewayProcess;
  let client: OpenAI;
  let anthropic: Anthropic;
  let keyDir: string;

  beforeAll(async () => {
    [bedrock, throttledBedrock, google, throttledGoogle, llm, staffOnly, ...down] = await Promise.all([
      startBedrockBackend(),
      startBedrockBackend(),
      startGeminiBackend({ apiKey: GEMINI_KEY }),
      startGeminiBackend({ apiKey: GEMINI_KEY }),
      startLlmBackend(),
      startLlmBackend(),
      startLlmBackend(),
      startLlmBackend(),
      startLlmBackend(),
    ]) as [FakeBedrock, FakeBedrock, FakeGoogle, FakeGoogle, FakeBackend, FakeBackend, ...FakeBackend[]];
    for (const backend of down) backend.failWith(503);
    // A service account whose key file sends its token requests to the fake's token endpoint.
    const account = createServiceAccount(google.tokenUri);
    google.addServiceAccount(account);
    keyDir = mkdtempSync(join(tmpdir(), "gw-vertex-"));
    const keyFile = join(keyDir, "service-account.json");
    writeFileSync(keyFile, JSON.stringify(account.keyFile));

    const ops = "operations: { chat: [/v1/chat/completions], messages: [/v1/messages] }";
    const onBedrock = (fake: FakeBedrock, extra = "") => `{ url: ${fake.url}, region: ${BEDROCK_TEST_REGION}, model: "${BEDROCK_MODEL}"${extra} }`;
    gw = await startGateway(
      `
server:
  backend_timeout: 10s
  user_type_header: x-user-type
services:
  - { type: chat, model: claude-bedrock, provider: bedrock, backends: [${onBedrock(bedrock)}], ${ops} }
  - { type: chat, model: claude-bedrock-key, provider: bedrock, backends: [${onBedrock(bedrock, `, api_key: ${BEDROCK_TEST_API_KEY}`)}], ${ops} }
  - { type: chat, model: gemini-studio, provider: gemini, backends: [{ url: ${google.url}, api_key: ${GEMINI_KEY}, model: gemini-2.5-flash }], ${ops} }
  - type: chat
    model: gemini-vertex
    provider: vertex_ai
    backends: [{ url: ${google.url}, project: test-project, location: us-central1, credentials_file: ${JSON.stringify(keyFile)}, model: gemini-2.5-pro }]
    ${ops}
  - type: chat
    model: claude-vertex
    provider: vertex_ai
    backends: [{ url: ${google.url}, project: test-project, location: us-central1, credentials_file: ${
        JSON.stringify(keyFile)
      }, model: "claude-sonnet-4@20250514" }]
    ${ops}
  - type: chat
    model: gpt-or-bedrock
    provider: openai
    backends:
      - { url: ${down[0].url}, api_key: sk-openai-test }
      - { provider: bedrock, url: ${bedrock.url}, region: ${BEDROCK_TEST_REGION}, model: "${BEDROCK_MODEL}", weight: 0 }
    ${ops}
  - type: chat
    model: gpt-or-claude
    provider: openai
    backends:
      - { url: ${down[1].url}, api_key: sk-openai-test }
      - { provider: anthropic, url: ${llm.url}, api_key: ${ANTHROPIC_KEY}, model: claude-mixed, weight: 0 }
    ${ops}
  - type: chat
    model: small-window
    provider: bedrock
    backends: [${onBedrock(bedrock)}]
    context_window_fallbacks: [large-window]
    ${ops}
  - { type: chat, model: large-window, provider: openai, backends: [{ url: ${llm.url}, api_key: sk-openai-test, model: gpt-large }], ${ops} }
  - type: chat
    model: primary-down
    provider: openai
    backends: [{ url: ${down[2].url}, api_key: sk-openai-test }]
    fallbacks: [staff-model, backup]
    ${ops}
  - type: chat
    model: staff-model
    provider: openai
    visibility: { user_types: [staff] }
    backends: [{ url: ${staffOnly.url}, api_key: sk-openai-test }]
    ${ops}
  - { type: chat, model: backup, provider: anthropic, backends: [{ url: ${llm.url}, api_key: ${ANTHROPIC_KEY}, model: claude-backup }], ${ops} }
  - { type: chat, model: bedrock-busy, provider: bedrock, backends: [${onBedrock(throttledBedrock)}], ${ops} }
  - { type: chat, model: gemini-busy, provider: gemini, backends: [{ url: ${throttledGoogle.url}, api_key: ${GEMINI_KEY}, model: gemini-2.5-flash }], ${ops} }
`,
      {
        // The AWS chain reads the environment first; nothing else of the machine's is looked at.
        env: {
          AWS_ACCESS_KEY_ID: BEDROCK_TEST_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: BEDROCK_TEST_CREDENTIALS.secretAccessKey,
          AWS_SESSION_TOKEN: "",
          AWS_EC2_METADATA_DISABLED: "true",
        },
      },
    );
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "caller-key", maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gw.url, apiKey: "caller-key", maxRetries: 0 });
  });

  afterAll(async () => {
    await gw?.kill();
    await Promise.all([bedrock, throttledBedrock, google, throttledGoogle, llm, staffOnly, ...(down ?? [])].map((fake) => fake?.stop()));
    if (keyDir) rmSync(keyDir, { recursive: true, force: true });
  });

  describe("bedrock", () => {
    it("answers a plain request through Converse, signed with SigV4 from the AWS credential chain", async () => {
      const before = bedrock.received.length;
      const completion = await client.chat.completions.create({ model: "claude-bedrock", messages: [user("hello bedrock")], max_tokens: 50 });
      expect(completion.choices[0].message.content).toBe(CONVERSE_TEXT);
      expect(completion.choices[0].finish_reason).toBe("stop");
      expect(completion.usage).toMatchObject({ prompt_tokens: CONVERSE_USAGE.inputTokens, completion_tokens: CONVERSE_USAGE.outputTokens });
      const sent = bedrock.received.slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatchObject({ path: `/model/${BEDROCK_MODEL_PATH}/converse`, auth: "sigv4", status: 200, modelId: BEDROCK_MODEL });
      expect(sent[0].headers.authorization).toContain(`Credential=${BEDROCK_TEST_CREDENTIALS.accessKeyId}/`);
      expect(sent[0].body).toMatchObject({ messages: [{ role: "user", content: [{ text: "hello bedrock" }] }], inferenceConfig: { maxTokens: 50 } });
    });

    it("streams through ConverseStream's binary event stream", async () => {
      const before = bedrock.received.length;
      const answer = await streamed(client, { model: "claude-bedrock", messages: [user("stream bedrock")] });
      expect(answer.text).toBe(CONVERSE_TEXT);
      expect(answer.finish).toBe("stop");
      expect(bedrock.received.slice(before)).toMatchObject([{ operation: "converse-stream", auth: "sigv4", status: 200 }]);
    });

    it("calls a tool and takes its result back, streamed and not", async () => {
      const ask = user("weather in Paris? [tool]");
      const call = await client.chat.completions.create({ model: "claude-bedrock", messages: [ask], tools: [WEATHER_TOOL] });
      const message = call.choices[0].message;
      expect(call.choices[0].finish_reason).toBe("tool_calls");
      const toolCall = message.tool_calls?.[0];
      if (toolCall?.type !== "function") throw new Error("no function call in the answer");
      expect(toolCall.function.name).toBe("get_weather");
      expect(JSON.parse(toolCall.function.arguments)).toEqual(TOOL_INPUT);

      const stream = await streamed(client, { model: "claude-bedrock", messages: [ask], tools: [WEATHER_TOOL] });
      expect(stream.finish).toBe("tool_calls");
      expect(stream.tools).toHaveLength(1);
      expect(stream.tools[0].name).toBe("get_weather");
      expect(JSON.parse(stream.tools[0].arguments)).toEqual(TOOL_INPUT);

      const result = await client.chat.completions.create({
        model: "claude-bedrock",
        tools: [WEATHER_TOOL],
        messages: [ask, message, { role: "tool", tool_call_id: toolCall.id, content: "sunny, 24C" }],
      });
      expect(result.choices[0].message.content).toBe("result: sunny, 24C");
    });

    it("takes a Bedrock API key instead of a signature", async () => {
      const before = bedrock.received.length;
      const completion = await client.chat.completions.create({ model: "claude-bedrock-key", messages: [user("with a key")] });
      expect(completion.choices[0].message.content).toBe(CONVERSE_TEXT);
      expect(bedrock.received.slice(before)).toMatchObject([{ auth: "api_key", status: 200, headers: { authorization: `Bearer ${BEDROCK_TEST_API_KEY}` } }]);
    });

    it("answers an Anthropic SDK client, plain and streamed", async () => {
      const request = { model: "claude-bedrock", max_tokens: 64, system: "be brief", messages: [{ role: "user" as const, content: "hi" }] };
      const message = await anthropic.messages.create(request);
      expect(textOf(message.content)).toBe(CONVERSE_TEXT);
      expect(message).toMatchObject({
        stop_reason: "end_turn",
        usage: { input_tokens: CONVERSE_USAGE.inputTokens, output_tokens: CONVERSE_USAGE.outputTokens },
      });
      const final = await anthropic.messages.stream(request).finalMessage();
      expect(textOf(final.content)).toBe(CONVERSE_TEXT);
      const sent = bedrock.received.filter((r) => JSON.stringify(r.body).includes("be brief"));
      expect(sent.map((r) => r.operation)).toEqual(["converse", "converse-stream"]);
      expect(sent[0].body).toMatchObject({ system: [{ text: "be brief" }] });
      // The SDK's x-api-key was the caller's key for the gateway: neither sent nor signed.
      for (const request of sent) expect(request.headers["x-api-key"]).toBeUndefined();
    });

    it("turns a ThrottlingException into a 429 rate_limit_error (Bedrock gives no Retry-After)", async () => {
      const error = await client.chat.completions.create({ model: "bedrock-busy", messages: [user("busy [throttle]")] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      const rateLimited = error as InstanceType<typeof OpenAI.RateLimitError>;
      expect(rateLimited.status).toBe(429);
      expect(rateLimited.error).toMatchObject({ type: "rate_limit_error" });
      expect(rateLimited.headers.get("retry-after")).toBeNull();
      expect(throttledBedrock.received.at(-1)).toMatchObject({ auth: "sigv4", status: 429 });
    });
  });

  describe("gemini (Google AI Studio)", () => {
    it("answers a plain request through generateContent with the key in x-goog-api-key", async () => {
      const before = google.received.length;
      const completion = await client.chat.completions.create({
        model: "gemini-studio",
        messages: [{ role: "system", content: "be brief" }, user("hello gemini")],
        max_tokens: 40,
        temperature: 0.2,
      });
      expect(completion.choices[0].message.content).toBe("echo: hello gemini");
      expect(completion.choices[0].finish_reason).toBe("stop");
      expect(completion.usage).toMatchObject({ prompt_tokens: GEMINI_USAGE.promptTokenCount, completion_tokens: GEMINI_USAGE.candidatesTokenCount });
      const sent = google.received.slice(before);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatchObject({ path: "/v1beta/models/gemini-2.5-flash:generateContent", headers: { "x-goog-api-key": GEMINI_KEY } });
      // The client's Authorization (its gateway key) stays behind: Google would take it for an OAuth token and refuse.
      expect(sent[0].headers.authorization).toBeUndefined();
      expect(sent[0].body).toMatchObject({
        systemInstruction: { parts: [{ text: "be brief" }] },
        contents: [{ role: "user", parts: [{ text: "hello gemini" }] }],
        generationConfig: { maxOutputTokens: 40, temperature: 0.2 },
      });
    });

    it("streams through streamGenerateContent?alt=sse", async () => {
      const before = google.received.length;
      const answer = await streamed(client, { model: "gemini-studio", messages: [user("stream gemini")] });
      expect(answer.text).toBe("echo: stream gemini");
      expect(answer.finish).toBe("stop");
      expect(google.received.slice(before)).toMatchObject([{ path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent", query: { alt: "sse" } }]);
    });

    it("calls a function and takes its response back", async () => {
      const ask = user("weather in Paris? [tool]");
      const call = await client.chat.completions.create({ model: "gemini-studio", messages: [ask], tools: [WEATHER_TOOL] });
      expect(call.choices[0].finish_reason).toBe("tool_calls");
      const message = call.choices[0].message;
      const toolCall = message.tool_calls?.[0];
      if (toolCall?.type !== "function") throw new Error("no function call in the answer");
      expect(toolCall.function.name).toBe("get_weather");
      expect(JSON.parse(toolCall.function.arguments)).toEqual(TOOL_ARGS);
      const result = await client.chat.completions.create({
        model: "gemini-studio",
        tools: [WEATHER_TOOL],
        messages: [ask, message, { role: "tool", tool_call_id: toolCall.id, content: "sunny" }],
      });
      expect(result.choices[0].message.content).toMatch(/^result: .*sunny/);
    });

    it("turns a 429 RESOURCE_EXHAUSTED into a 429 whose Retry-After is its RetryInfo delay", async () => {
      const error = await client.chat.completions.create({ model: "gemini-busy", messages: [user("busy [status:429]")] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.RateLimitError);
      const rateLimited = error as InstanceType<typeof OpenAI.RateLimitError>;
      expect(rateLimited.error).toMatchObject({ type: "rate_limit_error", code: "RESOURCE_EXHAUSTED" });
      expect(rateLimited.headers.get("retry-after")).toBe(String(Number.parseInt(RETRY_DELAY, 10)));
      expect(throttledGoogle.modelCalls()).toHaveLength(1);
    });
  });

  describe("vertex_ai", () => {
    it("answers Gemini plain and streamed with an OAuth token from the service-account key file", async () => {
      const before = google.received.length;
      const completion = await client.chat.completions.create({ model: "gemini-vertex", messages: [user("hello vertex")] });
      expect(completion.choices[0].message.content).toBe("echo: hello vertex");
      const answer = await streamed(client, { model: "gemini-vertex", messages: [user("stream vertex")] });
      expect(answer.text).toBe("echo: stream vertex");
      const calls = google.received.slice(before).filter((r) => r.path !== "/token");
      const base = "/v1/projects/test-project/locations/us-central1/publishers/google/models/gemini-2.5-pro";
      expect(calls.map((r) => r.path)).toEqual([`${base}:generateContent`, `${base}:streamGenerateContent`]);
      for (const call of calls) expect(call.headers.authorization).toMatch(/^Bearer ya29\.fake-token-\d+$/);
      // One token, fetched once and reused.
      expect(google.tokenGrants).toBeGreaterThanOrEqual(1);
      expect(calls[0].headers.authorization).toBe(calls[1].headers.authorization);
    });

    it("calls a function on Gemini", async () => {
      const call = await client.chat.completions.create({ model: "gemini-vertex", messages: [user("weather? [tool]")], tools: [WEATHER_TOOL] });
      const toolCall = call.choices[0].message.tool_calls?.[0];
      if (toolCall?.type !== "function") throw new Error("no function call in the answer");
      expect(toolCall.function.name).toBe("get_weather");
      expect(JSON.parse(toolCall.function.arguments)).toEqual(TOOL_ARGS);
    });

    it("sends a claude- model to Anthropic's rawPredict / streamRawPredict with the Messages protocol", async () => {
      const before = google.received.length;
      const completion = await client.chat.completions.create({ model: "claude-vertex", messages: [user("hello claude")] });
      expect(completion.choices[0].message.content).toBe("echo: hello claude");
      expect(completion.usage).toMatchObject({ prompt_tokens: CLAUDE_USAGE.input_tokens, completion_tokens: CLAUDE_USAGE.output_tokens });
      const answer = await streamed(client, { model: "claude-vertex", messages: [user("stream claude")] });
      expect(answer.text).toBe("echo: stream claude");
      const message = await anthropic.messages.create({ model: "claude-vertex", max_tokens: 32, messages: [{ role: "user", content: "sdk claude" }] });
      expect(textOf(message.content)).toBe("echo: sdk claude");
      const calls = google.received.slice(before).filter((r) => r.path !== "/token");
      const base = "/v1/projects/test-project/locations/us-central1/publishers/anthropic/models/claude-sonnet-4@20250514";
      expect(calls.map((r) => r.path)).toEqual([`${base}:rawPredict`, `${base}:streamRawPredict`, `${base}:rawPredict`]);
      for (const call of calls) {
        expect(call.headers.authorization).toMatch(/^Bearer ya29\./);
        expect(call.body).toMatchObject({ anthropic_version: "vertex-2023-10-16" });
      }
      // The Anthropic SDK's own key (x-api-key) was for the gateway, not for Google.
      expect(calls[2].headers["x-api-key"]).toBeUndefined();
    });
  });

  describe("one model, backends of different providers", () => {
    it("answers from the Bedrock backend when the OpenAI one answers 503, streamed and not", async () => {
      const downBefore = down[0].received.length;
      const before = bedrock.received.length;
      const { data, response } = await client.chat.completions.create({ model: "gpt-or-bedrock", messages: [user("mixed bedrock")] }).withResponse();
      expect(data.choices[0].message.content).toBe(CONVERSE_TEXT);
      expect(response.headers.get("x-gateway-model")).toBe("gpt-or-bedrock");
      const answer = await streamed(client, { model: "gpt-or-bedrock", messages: [user("mixed bedrock stream")] });
      expect(answer.text).toBe(CONVERSE_TEXT);
      expect(answer.headers.get("x-gateway-model")).toBe("gpt-or-bedrock");
      // The OpenAI-style backend got the chat body with its key; Bedrock a signed Converse body.
      const openAiCalls = down[0].received.slice(downBefore);
      expect(openAiCalls.length).toBeGreaterThanOrEqual(1);
      expect(openAiCalls[0]).toMatchObject({ path: "/v1/chat/completions", headers: { authorization: "Bearer sk-openai-test" } });
      expect(openAiCalls[0].body).toMatchObject({ messages: [{ role: "user", content: "mixed bedrock" }] });
      expect(bedrock.received.slice(before)).toMatchObject([
        { operation: "converse", auth: "sigv4", status: 200 },
        { operation: "converse-stream", auth: "sigv4", status: 200 },
      ]);
    });

    it("answers from the Anthropic backend when the OpenAI one answers 503, streamed and not", async () => {
      const { data, response } = await client.chat.completions.create({ model: "gpt-or-claude", messages: [user("mixed claude")] }).withResponse();
      expect(data.choices[0].message.content).toBe("Hello there");
      expect(data.usage).toMatchObject({ prompt_tokens: MESSAGES_USAGE.input_tokens, completion_tokens: MESSAGES_USAGE.output_tokens });
      expect(response.headers.get("x-gateway-model")).toBe("gpt-or-claude");
      const answer = await streamed(client, { model: "gpt-or-claude", messages: [user("mixed claude stream")] });
      expect(answer.text).toBe("Hello there");
      const sent = llm.received.filter((r) => JSON.stringify(r.body).includes("mixed claude"));
      expect(sent).toHaveLength(2);
      for (const request of sent) {
        expect(request).toMatchObject({ path: "/v1/messages", headers: { "x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01" } });
        expect(request.body).toMatchObject({ model: "claude-mixed" });
        expect(request.headers.authorization).toBeUndefined();
      }
    });
  });

  describe("model fallbacks", () => {
    it("moves a prompt too long for the model to its context_window_fallbacks model", async () => {
      const before = await metric(gw, "svc_llm_fallbacks_total", { model: "small-window", fallback: "large-window", reason: "context_window" });
      const { data, response } = await client.chat.completions.create({ model: "small-window", messages: [user("a long one [too-long]")] }).withResponse();
      expect(data.choices[0].message.content).toBe("echo: a long one [too-long]");
      expect(response.headers.get("x-gateway-model")).toBe("large-window");
      // Bedrock said it is too long; the fallback's backend got the request with its own model.
      expect(bedrock.received.filter((r) => JSON.stringify(r.body).includes("a long one"))).toMatchObject([{ status: 400 }]);
      const sent = llm.received.filter((r) => JSON.stringify(r.body).includes("a long one"));
      expect(sent).toMatchObject([{ path: "/v1/chat/completions", body: { model: "gpt-large" } }]);

      const answer = await streamed(client, { model: "small-window", messages: [user("a long stream [too-long]")] });
      expect(answer.text).toBe("echo: a long stream [too-long]");
      expect(answer.headers.get("x-gateway-model")).toBe("large-window");
      expect(await metric(gw, "svc_llm_fallbacks_total", { service_type: "chat", model: "small-window", fallback: "large-window", reason: "context_window" }))
        .toBe(before + 2);
    });

    it("skips a fallback the caller may not see, without a word, and answers from the next", async () => {
      const staffBefore = staffOnly.received.length;
      const { data, response } = await client.chat.completions.create({ model: "primary-down", messages: [user("who answers?")] }).withResponse();
      expect(data.choices[0].message.content).toBe("Hello there");
      expect(response.headers.get("x-gateway-model")).toBe("backup");
      expect(staffOnly.received.length).toBe(staffBefore);
      expect(llm.received.filter((r) => JSON.stringify(r.body).includes("who answers?"))).toMatchObject([{
        path: "/v1/messages",
        body: { model: "claude-backup" },
      }]);

      const answer = await streamed(client, { model: "primary-down", messages: [user("who streams?")] });
      expect(answer.text).toBe("Hello there");
      expect(answer.headers.get("x-gateway-model")).toBe("backup");
      expect(staffOnly.received.length).toBe(staffBefore);

      expect(await metric(gw, "svc_llm_fallbacks_total", { model: "primary-down", fallback: "backup", reason: "unavailable" })).toBeGreaterThanOrEqual(2);
      expect(await metric(gw, "svc_llm_fallbacks_total", { fallback: "staff-model" })).toBe(0);
    });

    it("tries the hidden fallback first for a caller who may see it", async () => {
      const staff = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: "caller-key", maxRetries: 0, defaultHeaders: { "x-user-type": "staff" } });
      const { data, response } = await staff.chat.completions.create({ model: "primary-down", messages: [user("staff asks")] }).withResponse();
      expect(data.choices[0].message.content).toBe("echo: staff asks");
      expect(response.headers.get("x-gateway-model")).toBe("staff-model");
      expect(staffOnly.received.filter((r) => JSON.stringify(r.body).includes("staff asks"))).toHaveLength(1);
      expect(await metric(gw, "svc_llm_fallbacks_total", { model: "primary-down", fallback: "staff-model", reason: "unavailable" })).toBe(1);
    });

    it("names the model on a direct answer too", async () => {
      const { response } = await client.chat.completions.create({ model: "gemini-studio", messages: [user("direct")] }).withResponse();
      expect(response.headers.get("x-gateway-model")).toBe("gemini-studio");
    });
  });
});
