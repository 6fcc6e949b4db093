/**
 * A client protocol added by a plugin of its own, as the built-in Messages one is: the real
 * sync-proxy, providers and llm-proxy plugins in one runtime, a toy protocol ("plain": a
 * `prompt` in, a `text` out, on /v1/plain) registered through the contract, and an injected
 * `fetch` standing in for the backends. What the client sees and what the backends get shows
 * every part of the contract at work: the shape check, the request translated to chat
 * completions and the answer, the stream and the errors translated back, the gateway's own
 * errors in the protocol's shape, and a provider that speaks the protocol natively.
 */
import { afterEach, describe, expect, it } from "vitest";
import { chatAnswer, chatErrorBody, chatStreamData, type ClientProtocol, fieldProblem, STRING } from "../../../core/llm/client-protocol.ts";
import { errors } from "../../../core/errors.ts";
import { isRecord } from "../../../core/llm/json.ts";
import { type LlmUsageEvent, usageFromCounts } from "../../../core/llm/usage.ts";
import { listsAnyPath, protocolErrors } from "../../../core/llm/protocol-errors.ts";
import type { ProviderDefinition } from "../../../core/llm/provider.ts";
import { definePlugin } from "../../../core/plugins/types.ts";
import llmProxy from "../../../plugins/llm-proxy/index.ts";
import providerChatCompletions from "../../../plugins/provider-chat-completions/index.ts";
import providers from "../../../plugins/providers/index.ts";
import syncProxy from "../../../plugins/sync-proxy/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

const contentOf = (
  chat: unknown,
): unknown => (isRecord(chat) && Array.isArray(chat.choices) && isRecord(chat.choices[0]) && isRecord(chat.choices[0].message)
  ? chat.choices[0].message.content
  : undefined);
const deltaOf = (
  chunk: unknown,
): unknown => (isRecord(chunk) && Array.isArray(chunk.choices) && isRecord(chunk.choices[0]) && isRecord(chunk.choices[0].delta)
  ? chunk.choices[0].delta.content
  : undefined);

/** The toy protocol: `{model, prompt, stream}` in; `{text}` out; `{failure}` for errors; streams of `{delta}` events. */
const plain = {
  name: "plain",
  paths: ["/v1/plain"],
  shapeProblem: (body) => fieldProblem(body, [["prompt", STRING]]),
  toChatRequest: (body) => ({ model: body.model, messages: [{ role: "user", content: body.prompt }], stream: body.stream === true }),
  fromChat: (chat) => ({
    translateResponse(body) {
      const answer = chatAnswer(chat, body);
      return { body: { text: contentOf(answer.body) }, usage: answer.usage };
    },
    translateStreamEvent: (event) =>
      chatStreamData(chat, event).flatMap((data) => {
        const delta = deltaOf(data);
        return typeof delta === "string" ? [{ event: "delta", data: { delta } }] : [];
      }),
    streamProgress: () => chat.streamProgress?.() ?? { ended: false, usage: undefined },
    translateError(status, body) {
      const error = chatErrorBody(chat, status, body);
      return { failure: isRecord(error) && isRecord(error.error) ? error.error.message : String(error) };
    },
  }),
  native: {
    watch: () => ({}),
    answerUsage: (body) => (isRecord(body) ? usageFromCounts(body.tokens_in, body.tokens_out) : undefined),
  },
  errorBody: (_status, body) => ({ failure: body.error.message }),
  streamErrorEvent: (message) => ({ event: "failure", data: { failure: message } }),
} satisfies ClientProtocol;

const protocolPlain = definePlugin({
  name: "protocol-plain",
  dependsOn: ["providers"],
  setup(api) {
    api.use("clientProtocols").register(plain);
    if (listsAnyPath(api.config.services, plain.paths)) api.middleware(protocolErrors(plain));
  },
});

/** A backend that speaks "plain" itself: requests in it go to it untranslated. */
const plainSpeaker: ProviderDefinition = { name: "plain_speaker", defaultUrl: "", speaks: ["plain"], createTranslator: () => ({}) };
const providerPlainSpeaker = definePlugin({
  name: "provider-plain-speaker",
  dependsOn: ["providers"],
  setup: (api) => api.use("providers").register(plainSpeaker),
});

const SERVICES = `
services:
  - { type: chat, model: chatty, provider: chat_completions, inference_url: "http://chat.test", operations: { plain: [/v1/plain] } }
  - { type: chat, model: native, provider: plain_speaker, inference_url: "http://plain.test", operations: { plain: [/v1/plain] } }
`;

interface Sent {
  url: string;
  body: unknown;
}

const completion = JSON.stringify({
  id: "c",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
});
const chunk = (content: string) => `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content } }] })}\n\n`;

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

async function setUp() {
  const sent: Sent[] = [];
  const events: LlmUsageEvent[] = [];
  const fakeFetch: typeof fetch = async (input, init) => {
    const url = String(input);
    const body = JSON.parse(new TextDecoder().decode(init?.body as Uint8Array)) as Record<string, unknown>;
    sent.push({ url, body });
    if (url.startsWith("http://plain.test")) {
      return new Response(JSON.stringify({ text: "native", tokens_in: 7, tokens_out: 1 }), { headers: { "content-type": "application/json" } });
    }
    if (JSON.stringify(body.messages).includes('"fail"')) {
      return new Response(JSON.stringify({ error: { message: "the backend refuses", type: "invalid_request_error" } }), {
        status: 400,
        headers: { "content-type": "application/json" },
      });
    }
    // A stream that breaks off: two chunks, no [DONE].
    if (body.stream === true) return new Response(chunk("hel") + chunk("lo"), { headers: { "content-type": "text/event-stream" } });
    return new Response(completion, { headers: { "content-type": "application/json" } });
  };
  const listener = definePlugin({ name: "usage-listener", setup: (api) => api.on("llm.usage", (event) => events.push(event)) });
  const started = await startTestRuntime(SERVICES, [syncProxy, providers, providerChatCompletions, providerPlainSpeaker, protocolPlain, llmProxy, listener], {
    fetch: fakeFetch,
  });
  runtimes.push(started);
  const call = (body: unknown) => started.request("/v1/plain", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { sent, events, call };
}

describe("a client protocol registered by a plugin", () => {
  it("translates a request to chat completions for a provider that does not speak it, and the answer and its usage back", async () => {
    const { sent, events, call } = await setUp();
    const response = await call({ model: "chatty", prompt: "hi" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ text: "hello" });
    expect(sent).toEqual([{
      url: "http://chat.test/v1/chat/completions",
      body: { model: "chatty", messages: [{ role: "user", content: "hi" }], stream: false },
    }]);
    expect(events).toMatchObject([{ model: "chatty", prompt: 3, completion: 2 }]);
  });

  it("translates a backend's error back, the status kept", async () => {
    const { call } = await setUp();
    const response = await call({ model: "chatty", prompt: "fail" });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ failure: "the backend refuses" });
  });

  it("translates a stream, and ends one that breaks off with the protocol's own error event", async () => {
    const { call } = await setUp();
    const response = await call({ model: "chatty", prompt: "hi", stream: true });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('event: delta\ndata: {"delta":"hel"}');
    expect(text).toContain('event: delta\ndata: {"delta":"lo"}');
    expect(text).toMatch(/event: failure\ndata: \{"failure":"[^"]+"\}\n\n$/);
  });

  it("refuses a body of the wrong shape with 400 in the protocol's error shape, before any backend", async () => {
    const { sent, call } = await setUp();
    const response = await call({ model: "chatty", prompt: 5 });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ failure: '"prompt" must be a string, not 5' });
    expect(sent).toEqual([]);
  });

  it("answers the gateway's own errors (an unknown model's 404) in the protocol's error shape", async () => {
    const { call } = await setUp();
    const response = await call({ model: "nope", prompt: "hi" });
    expect(response.status).toBe(404);
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(["failure"]);
    expect(body.failure).toContain('"nope"');
  });

  it("sends a request untranslated to a provider that speaks the protocol, and reads the usage as the protocol says", async () => {
    const { sent, events, call } = await setUp();
    const response = await call({ model: "native", prompt: "hi" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ text: "native", tokens_in: 7, tokens_out: 1 });
    expect(sent).toEqual([{ url: "http://plain.test/v1/plain", body: { model: "native", prompt: "hi" } }]);
    expect(events).toMatchObject([{ model: "native", prompt: 7, completion: 1 }]);
  });
});

/**
 * A protocol that keeps state (`open`): each request is opened with the caller's consumer before
 * anything is sent, may be refused there, and is served by the protocol it opened; a complete
 * answer waits for `settled`, and a broken stream may end with several events.
 */
const settledOrder: string[] = [];
const opening = {
  name: "opening",
  paths: ["/v1/opened"],
  async open(body, call) {
    if (body.ref === "missing") throw errors.notFound(`no reference "missing" for ${call.consumer ?? "anyone"}`);
    const prefix = `${call.consumer ?? "anonymous"}:${call.native ? "native" : "translated"}:`;
    const protocol: ClientProtocol = {
      ...opening,
      toChatRequest: (request) => ({
        model: request.model,
        messages: [{ role: "user", content: prefix + String(request.prompt) }],
        stream: request.stream === true,
      }),
      fromChat: (chat) => ({
        translateResponse(answer) {
          const translated = chatAnswer(chat, answer);
          settledOrder.push("answered");
          return { body: { text: contentOf(translated.body), by: prefix }, usage: translated.usage };
        },
        translateStreamEvent: (event) =>
          chatStreamData(chat, event).flatMap((data) => (typeof deltaOf(data) === "string" ? [{ event: "delta", data: { delta: deltaOf(data) } }] : [])),
        streamProgress: () => chat.streamProgress?.() ?? { ended: false, usage: undefined },
      }),
      streamErrorEvent: (message) => [{ event: "broken", data: { message } }, { event: "end", data: { by: prefix } }],
    };
    return { protocol, settled: () => Promise.resolve().then(() => void settledOrder.push("settled")) };
  },
} satisfies ClientProtocol;

const protocolOpening = definePlugin({
  name: "protocol-opening",
  dependsOn: ["providers"],
  setup: (api) => api.use("clientProtocols").register(opening),
});

describe("a client protocol that opens each request", () => {
  async function openingRuntime() {
    const sent: Sent[] = [];
    const fakeFetch: typeof fetch = async (input, init) => {
      const body = JSON.parse(new TextDecoder().decode(init?.body as Uint8Array)) as Record<string, unknown>;
      sent.push({ url: String(input), body });
      if (body.stream === true) return new Response(chunk("hel") + chunk("lo"), { headers: { "content-type": "text/event-stream" } });
      return new Response(completion, { headers: { "content-type": "application/json" } });
    };
    const started = await startTestRuntime(
      `server:\n  consumer_header: x-consumer\nservices:\n  - { type: chat, model: chatty, provider: chat_completions, inference_url: "http://chat.test", operations: { opened: [/v1/opened] } }\n`,
      [syncProxy, providers, providerChatCompletions, protocolOpening, llmProxy],
      { fetch: fakeFetch },
    );
    runtimes.push(started);
    const call = (body: unknown) =>
      started.request("/v1/opened", { method: "POST", headers: { "content-type": "application/json", "x-consumer": "ann" }, body: JSON.stringify(body) });
    return { sent, call };
  }

  it("serves the request with the protocol it opened, knowing the caller, once its writes settled", async () => {
    const { sent, call } = await openingRuntime();
    settledOrder.length = 0;
    const response = await call({ model: "chatty", prompt: "hi" });
    expect(await response.json()).toEqual({ text: "hello", by: "ann:translated:" });
    expect(sent).toMatchObject([{ url: "http://chat.test/v1/chat/completions", body: { messages: [{ role: "user", content: "ann:translated:hi" }] } }]);
    expect(settledOrder).toEqual(["answered", "settled"]);
  });

  it("answers what open throws, sending nothing", async () => {
    const { sent, call } = await openingRuntime();
    const response = await call({ model: "chatty", prompt: "hi", ref: "missing" });
    expect(response.status).toBe(404);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe('no reference "missing" for ann');
    expect(sent).toEqual([]);
  });

  it("ends a broken stream with every event of the opened protocol's streamErrorEvent, in order", async () => {
    const { call } = await openingRuntime();
    const text = await (await call({ model: "chatty", prompt: "hi", stream: true })).text();
    expect(text).toMatch(/event: broken\ndata: \{"message":"[^"]+"\}\n\nevent: end\ndata: \{"by":"ann:translated:"\}\n\n$/);
  });
});
