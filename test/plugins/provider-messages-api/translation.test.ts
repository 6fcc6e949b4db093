import { describe, expect, it } from "vitest";
import type { OutEvent, StreamEvent, Translator, TranslatorContext } from "../../../core/llm/provider.ts";
import { SseParser } from "../../../core/llm/sse.ts";
import { chatToMessagesRequest, DEFAULT_MAX_TOKENS } from "../../../plugins/provider-messages-api/chat-to-messages.ts";
import { messagesApiProvider } from "../../../plugins/provider-messages-api/index.ts";

const context: TranslatorContext = { stream: false, now: () => Date.UTC(2026, 0, 1), newId: () => "id-1" };
const translator = (): Translator => messagesApiProvider.createTranslator(context);

describe("messages_api request translation", () => {
  it("moves system and developer messages (and a system field) into the system string", () => {
    const out = chatToMessagesRequest({
      model: "m",
      system: "From the field.",
      messages: [{ role: "system", content: [{ type: "text", text: "A" }, { type: "text", text: "B" }] }, { role: "developer", content: "C" }, {
        role: "user",
        content: "hi",
      }],
    });
    expect(out.system).toBe("From the field.\n\nAB\n\nC");
    expect(out.messages).toEqual([{ role: "user", content: "hi" }]);
  });

  it("defaults max_tokens and prefers max_completion_tokens", () => {
    expect(chatToMessagesRequest({ messages: [] }).max_tokens).toBe(DEFAULT_MAX_TOKENS);
    expect(DEFAULT_MAX_TOKENS).toBe(4096);
    expect(chatToMessagesRequest({ messages: [], max_tokens: 9, max_completion_tokens: 7 }).max_tokens).toBe(7);
    expect(chatToMessagesRequest({ messages: [], max_tokens: 9 }).max_tokens).toBe(9);
  });

  it("refuses fields of the wrong type, naming the field and what it must be", () => {
    expect(() => chatToMessagesRequest({ messages: [], stop: 5 })).toThrow('"stop" must be a string or an array of strings, not 5');
    expect(() => chatToMessagesRequest({ messages: [], stop: ["a", 1] })).toThrow('"stop" must be a string or an array of strings, not ["a",1]');
    expect(() => chatToMessagesRequest({ messages: [], max_tokens: "abc" })).toThrow('"max_tokens" must be a positive integer, not "abc"');
    expect(() => chatToMessagesRequest({ messages: [], max_tokens: 0 })).toThrow('"max_tokens" must be a positive integer, not 0');
    expect(() => chatToMessagesRequest({ messages: [], max_completion_tokens: 1.5 })).toThrow('"max_completion_tokens" must be a positive integer, not 1.5');
    expect(() => chatToMessagesRequest({ messages: [], stream: "yes" })).toThrow('"stream" must be true or false, not "yes"');
    expect(() => chatToMessagesRequest({ messages: [], temperature: "hot" })).toThrow('"temperature" must be a number, not "hot"');
    // null is "not set", as the chat-completions API takes it.
    expect(chatToMessagesRequest({ messages: [], stop: null, max_tokens: null, stream: null, temperature: null })).toEqual({ messages: [], max_tokens: 4096 });
  });

  it("turns stop into stop_sequences and drops fields the Messages API refuses", () => {
    const out = chatToMessagesRequest({
      messages: [],
      stop: "X",
      n: 2,
      logprobs: true,
      response_format: { type: "json_object" },
      seed: 1,
      stream_options: { include_usage: true },
      stream: true,
      top_p: 0.9,
    });
    expect(out).toEqual({ messages: [], max_tokens: 4096, stop_sequences: ["X"], stream: true, top_p: 0.9 });
  });

  it("translates tools, keeps tools already in the Messages shape, and every tool_choice form", () => {
    const tools = [
      { type: "function", function: { name: "f", description: "d", parameters: { type: "object", properties: { a: { type: "string" } } } } },
      { type: "function", function: { name: "g" } },
      { name: "native", input_schema: { type: "object" } },
    ];
    expect(chatToMessagesRequest({ messages: [], tools }).tools).toEqual([
      { name: "f", description: "d", input_schema: { type: "object", properties: { a: { type: "string" } } } },
      { name: "g", input_schema: { type: "object", properties: {} } },
      { name: "native", input_schema: { type: "object" } },
    ]);
    const choice = (tool_choice: unknown, parallel_tool_calls?: boolean) =>
      chatToMessagesRequest({ messages: [], tool_choice, parallel_tool_calls }).tool_choice;
    expect(choice("auto")).toEqual({ type: "auto" });
    expect(choice("required")).toEqual({ type: "any" });
    expect(choice("none")).toEqual({ type: "none" });
    expect(choice({ type: "function", function: { name: "f" } })).toEqual({ type: "tool", name: "f" });
    expect(choice(undefined, false)).toEqual({ type: "auto", disable_parallel_tool_use: true });
    expect(choice(undefined)).toBeUndefined();
  });

  it("translates image parts to image blocks", () => {
    const out = chatToMessagesRequest({
      messages: [{
        role: "user",
        content: [{ type: "text", text: "what is it?" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }, {
          type: "image_url",
          image_url: { url: "https://example.test/a.png" },
        }],
      }],
    });
    expect(out.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "what is it?" },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
          { type: "image", source: { type: "url", url: "https://example.test/a.png" } },
        ],
      },
    ]);
  });

  it("refuses what it cannot express, saying where", () => {
    expect(() => chatToMessagesRequest({ messages: "nope" })).toThrow("messages must be an array");
    expect(() => chatToMessagesRequest({ messages: [{ role: "assistant", tool_calls: [{ id: "1", function: { name: "f", arguments: "{bad" } }] }] })).toThrow(
      "messages[0].tool_calls[0].function.arguments is not valid JSON",
    );
  });
});

describe("messages_api response translation", () => {
  const message = (extra: Record<string, unknown>) => ({
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "m",
    content: [{ type: "text", text: "a" }, { type: "thinking", thinking: "hidden" }, { type: "text", text: "b" }],
    stop_reason: "end_turn",
    usage: { input_tokens: 3, output_tokens: 4 },
    ...extra,
  });

  it("joins text blocks and maps usage", () => {
    const out = translator().translateResponse?.(message({}));
    expect(out?.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4 });
    expect(out?.body).toEqual({
      id: "msg_1",
      object: "chat.completion",
      created: Date.UTC(2026, 0, 1) / 1000,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "ab" }, logprobs: null, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  });

  it.each([
    ["end_turn", "stop"],
    ["stop_sequence", "stop"],
    ["max_tokens", "length"],
    ["tool_use", "tool_calls"],
    ["refusal", "content_filter"],
    ["pause_turn", "stop"],
  ])("maps stop_reason %s to %s", (stopReason, finish) => {
    const body = translator().translateResponse?.(message({ stop_reason: stopReason })).body as { choices: Array<{ finish_reason: string }> };
    expect(body.choices[0].finish_reason).toBe(finish);
  });

  it("turns tool_use blocks into tool_calls with JSON-string arguments, content null when there is no text", () => {
    const out = translator().translateResponse?.(
      message({ content: [{ type: "tool_use", id: "t1", name: "f", input: { x: [1, 2] } }], stop_reason: "tool_use" }),
    );
    expect((out?.body as { choices: Array<{ message: unknown }> }).choices[0].message).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "t1", type: "function", function: { name: "f", arguments: '{"x":[1,2]}' } }],
    });
  });

  it("keeps usage unknown when the backend does not report it", () => {
    const out = translator().translateResponse?.(message({ usage: { input_tokens: 3 } }));
    expect(out?.usage).toBeUndefined();
    expect(out?.body).not.toHaveProperty("usage");
  });

  it("throws on a body that is not a message (the gateway answers 502)", () => {
    expect(() => translator().translateResponse?.({ hello: "world" })).toThrow("not a Messages-style message");
  });

  it("translates error bodies", () => {
    const t = translator();
    expect(t.translateError?.(400, { type: "error", error: { type: "invalid_request_error", message: "bad" } })).toEqual({
      error: { message: "bad", type: "invalid_request_error" },
    });
    expect(t.translateError?.(502, "<html>bad gateway</html>")).toEqual({ error: { message: "<html>bad gateway</html>", type: "backend_error" } });
    expect(t.translateError?.(401, {})).toEqual({ error: { message: "the backend answered HTTP 401", type: "authentication_error" } });
  });
});

describe("messages_api stream translation", () => {
  const sse = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const stream = [
    sse("message_start", { message: { id: "msg_s", model: "m", usage: { input_tokens: 10, output_tokens: 1 } } }),
    sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    sse("ping", {}),
    sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hi" } }),
    sse("content_block_stop", { index: 0 }),
    sse("content_block_start", { index: 1, content_block: { type: "tool_use", id: "t1", name: "f", input: {} } }),
    sse("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: '{"a":' } }),
    sse("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: "1}" } }),
    sse("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 6 } }),
    sse("message_stop", {}),
  ].join("");

  function run(t: Translator, text: string): OutEvent[] {
    const parser = new SseParser();
    const events: StreamEvent[] = [...parser.push(text), ...parser.end()];
    return [...events.flatMap((e) => t.translateStreamEvent?.(e) ?? []), ...(t.translateStreamEnd?.() ?? [])];
  }

  it("produces chat-completions chunks, the usage chunk when asked for, then [DONE]", () => {
    const t = translator();
    t.translateRequest?.({ messages: [], stream: true, stream_options: { include_usage: true } });
    const out = run(t, stream);
    expect(out[out.length - 1]).toEqual({ data: "[DONE]" });
    const chunks = out.slice(0, -1).map((e) =>
      e.data as { id: string; choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>; usage?: unknown }
    );
    expect(chunks.every((c) => c.id === "msg_s")).toBe(true);
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([
      { role: "assistant", content: "" },
      { content: "Hi" },
      { tool_calls: [{ index: 0, id: "t1", type: "function", function: { name: "f", arguments: "" } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: "1}" } }] },
      {},
      undefined,
    ]);
    expect(chunks[5].choices[0].finish_reason).toBe("tool_calls");
    expect(chunks[6]).toMatchObject({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 6, total_tokens: 16 } });
  });

  it("leaves the usage chunk out when the client turned include_usage off", () => {
    const t = translator();
    t.translateRequest?.({ messages: [], stream: true, stream_options: { include_usage: false } });
    expect(run(t, stream).some((e) => typeof e.data === "object" && e.data !== null && "usage" in e.data)).toBe(false);
  });

  it("reports an error event as an error event and the end of the stream", () => {
    const t = translator();
    expect(run(t, sse("error", { error: { type: "overloaded_error", message: "Overloaded" } }))).toEqual([{
      data: { error: { message: "Overloaded", type: "overloaded_error" } },
    }]);
    expect(t.streamProgress?.().ended).toBe(true);
  });

  it("reports a stream as ended only at message_stop, with the usage of message_start and message_delta", () => {
    const cut = translator();
    run(cut, stream.split("event: message_delta")[0]);
    expect(cut.streamProgress?.().ended).toBe(false);
    const whole = translator();
    run(whole, stream);
    expect(whole.streamProgress?.().ended).toBe(true);
    expect(whole.streamProgress?.().usage).toEqual({ prompt_tokens: expect.any(Number), completion_tokens: 6 });
  });
});
