/**
 * The inbound Messages translators, one direction each: a Messages request to chat
 * completions, a chat-completions answer and error to Messages, a chat-completions stream to
 * Messages events; and the composed translator in front of a provider's own.
 */
import { describe, expect, it } from "vitest";
import type { OutEvent, StreamEvent, Translator, TranslatorContext } from "../../../core/llm/provider.ts";
import { chatToMessagesError, chatToMessagesResponse } from "../../../plugins/protocol-messages/chat-to-messages-answer.ts";
import { ChatStreamToMessages } from "../../../plugins/protocol-messages/chat-stream-to-messages.ts";
import { messagesFromChat, nativeMessages } from "../../../plugins/protocol-messages/translators.ts";
import { messagesToChatRequest } from "../../../plugins/protocol-messages/messages-to-chat-request.ts";
import { UntranslatableRequest } from "../../../core/llm/client-protocol.ts";

const context: TranslatorContext = { stream: false, now: () => 1_700_000_000_000, newId: () => "0000-1111" };
const id = () => "msg_new";

describe("Messages request -> chat completions", () => {
  it("translates system, text and image blocks, tools, tool_choice, tool_use / tool_result, stops, limits and the user", () => {
    const chat = messagesToChatRequest({
      model: "claude",
      system: [{ type: "text", text: "Be brief." }, { type: "text", text: " Be kind." }],
      max_tokens: 100,
      temperature: 0.2,
      top_p: 0.9,
      top_k: 5,
      stop_sequences: ["END"],
      stream: true,
      metadata: { user_id: "u-1" },
      tools: [{ name: "get_weather", description: "Weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }],
      tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true },
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } },
            { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
          ],
        },
        {
          role: "assistant",
          content: [{ type: "thinking", thinking: "hm" }, { type: "text", text: "Checking." }, {
            type: "tool_use",
            id: "toolu_1",
            name: "get_weather",
            input: { city: "Paris" },
          }],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sunny" }] }, { type: "text", text: "And tomorrow?" }],
        },
      ],
    });
    expect(chat).toEqual({
      model: "claude",
      max_tokens: 100,
      temperature: 0.2,
      top_p: 0.9,
      stop: ["END"],
      stream: true,
      user: "u-1",
      tools: [{
        type: "function",
        function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } } },
      }],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      messages: [
        { role: "system", content: "Be brief. Be kind." },
        {
          role: "user",
          content: [
            { type: "text", text: "What is this?" },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
            { type: "image_url", image_url: { url: "https://example.com/a.png" } },
          ],
        },
        {
          role: "assistant",
          content: "Checking.",
          tool_calls: [{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
        },
        { role: "tool", tool_call_id: "toolu_1", content: "sunny" },
        { role: "user", content: [{ type: "text", text: "And tomorrow?" }] },
      ],
    });
  });

  it.each([
    [{ type: "auto" }, "auto"],
    [{ type: "any" }, "required"],
    [{ type: "none" }, "none"],
  ])("maps tool_choice %j to %j", (choice, expected) => {
    expect(messagesToChatRequest({ max_tokens: 1, messages: [], tool_choice: choice }).tool_choice).toBe(expected);
  });

  it.each([
    [{ messages: [] }, '"max_tokens" must be a positive integer'],
    [{ max_tokens: 1 }, '"messages" must be an array'],
    [{ max_tokens: 1, messages: [{ role: "system", content: "x" }] }, 'messages[0].role must be "user" or "assistant"'],
    [{ max_tokens: 1, messages: [{ role: "user", content: [{ type: "document" }] }] }, 'messages[0].content[0]: a "document" block cannot be sent'],
    [{ max_tokens: 1, messages: [], temperature: "hot" }, '"temperature" must be a number'],
    [{ max_tokens: 1, messages: [], tool_choice: { type: "sometimes" } }, '"tool_choice" must be'],
  ])("refuses %j saying what to fix", (body, message) => {
    expect(() => messagesToChatRequest(body)).toThrow(UntranslatableRequest);
    expect(() => messagesToChatRequest(body)).toThrow(message);
  });
});

describe("chat-completions answer -> Messages", () => {
  it("turns content and tool calls into blocks, the finish reason into a stop reason, usage into Messages counts", () => {
    const message = chatToMessagesResponse(
      {
        id: "chatcmpl-1",
        model: "gpt",
        choices: [{
          index: 0,
          finish_reason: "tool_calls",
          message: {
            role: "assistant",
            content: "Checking.",
            tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
          },
        }],
        usage: { prompt_tokens: 30, completion_tokens: 7, total_tokens: 37, prompt_tokens_details: { cached_tokens: 20 } },
      },
      id,
    );
    expect(message).toEqual({
      id: "chatcmpl-1",
      type: "message",
      role: "assistant",
      model: "gpt",
      content: [{ type: "text", text: "Checking." }, { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Paris" } }],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 7, cache_read_input_tokens: 20 },
    });
  });

  it.each([
    ["stop", "end_turn"],
    ["length", "max_tokens"],
    ["content_filter", "refusal"],
  ])("maps finish_reason %s to stop_reason %s", (finish, stop) => {
    expect(chatToMessagesResponse({ choices: [{ message: { content: "x" }, finish_reason: finish }] }, id).stop_reason).toBe(stop);
  });

  it("refuses an answer that is not a chat completion", () => {
    expect(() => chatToMessagesResponse({ nope: true }, id)).toThrow("no choices array");
  });

  it("turns errors into the Messages error shape, keeping a type the Messages API knows and mapping others by status", () => {
    expect(chatToMessagesError(404, { error: { message: "no model", type: "not_found_error" } })).toEqual({
      type: "error",
      error: { type: "not_found_error", message: "no model" },
    });
    expect(chatToMessagesError(502, { error: { message: "down", type: "backend_error" } })).toEqual({
      type: "error",
      error: { type: "api_error", message: "down" },
    });
    expect(chatToMessagesError(429, "slow down")).toEqual({ type: "error", error: { type: "rate_limit_error", message: "slow down" } });
    const already = { type: "error", error: { type: "overloaded_error", message: "busy" } };
    expect(chatToMessagesError(529, already)).toBe(already);
  });
});

const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-1",
  model: "gpt",
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});

const names = (events: OutEvent[]) => events.map((e) => e.event);

describe("chat-completions stream -> Messages events", () => {
  it("streams text then a tool call as blocks, and ends with message_delta (stop reason, usage) and message_stop at [DONE]", () => {
    const stream = new ChatStreamToMessages(id);
    const events = [
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Let me" }),
      chunk({ content: " look." }),
      chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
      chunk({}, "tool_calls"),
      { id: "chatcmpl-1", model: "gpt", choices: [], usage: { prompt_tokens: 11, completion_tokens: 7 } },
      "[DONE]",
    ].flatMap((data) => stream.event(data));
    expect(names(events)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events[0].data).toMatchObject({ type: "message_start", message: { id: "chatcmpl-1", model: "gpt", role: "assistant", content: [] } });
    expect(events[1].data).toEqual({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
    expect(events[2].data).toEqual({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Let me" } });
    expect(events[5].data).toEqual({
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "call_1", name: "get_weather", input: {} },
    });
    expect(events[6].data).toEqual({ type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"city":' } });
    expect(events[9].data).toEqual({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { input_tokens: 11, output_tokens: 7 },
    });
    // Nothing after the end.
    expect(stream.event(chunk({ content: "late" }))).toEqual([]);
  });

  it("ends a stream that had a finish reason but no [DONE] when the backend stream ends; owes nothing to one that never started", () => {
    const stream = new ChatStreamToMessages(id);
    stream.event(chunk({ content: "hi" }, "length"));
    expect(names(stream.end())).toEqual(["content_block_stop", "message_delta", "message_stop"]);
    expect(new ChatStreamToMessages(id).end()).toEqual([]);
    // An end with nothing before it still makes a whole message.
    expect(names(new ChatStreamToMessages(id).event("[DONE]"))).toEqual(["message_start", "message_delta", "message_stop"]);
  });

  it("turns an error chunk into an error event", () => {
    const stream = new ChatStreamToMessages(id);
    expect(stream.event({ error: { message: "boom", type: "backend_error" } })).toEqual([{
      event: "error",
      data: { type: "error", error: { type: "api_error", message: "boom" } },
    }]);
  });
});

const sse = (data: unknown, event?: string): StreamEvent => ({
  ...(event ? { event } : {}),
  data: typeof data === "string" ? data : JSON.stringify(data),
  json: typeof data === "string" ? undefined : data,
});

describe("the composed translator", () => {
  it("puts the provider's own translation first: its chat events become Messages events, its progress is the stream's", () => {
    let ended = false;
    const inner: Translator = {
      translateRequest: (body) => ({ ...body, translated: true }),
      translateStreamEvent: (
        event,
      ) => (event.data === "end" ? ((ended = true), [{ data: chunk({}, "stop") }, { data: "[DONE]" }]) : [{ data: chunk({ content: event.data }) }]),
      streamProgress: () => ({ ended, usage: undefined }),
      translateError: (_status, body) => ({ error: { message: `inner: ${String(body)}`, type: "invalid_request_error" } }),
    };
    const translator = messagesFromChat(inner, context);
    expect(translator.translateRequest?.({ model: "m" })).toEqual({ model: "m", translated: true });
    const events = [sse("hi"), sse("end")].flatMap((e) => translator.translateStreamEvent?.(e) ?? []);
    expect(names(events)).toEqual(["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    expect(translator.streamProgress?.()).toEqual({ ended: true, usage: undefined });
    expect(translator.translateError?.(400, "bad")).toEqual({ type: "error", error: { type: "invalid_request_error", message: "inner: bad" } });
  });

  it("reads a provider's untranslated chat answer (its usage counted) and watches its untranslated stream", () => {
    const seen: StreamEvent[] = [];
    const translator = messagesFromChat({ observeStreamEvent: (event) => seen.push(event) }, context);
    expect(translator.translateRequest).toBeUndefined();
    const answer = translator.translateResponse?.({
      id: "",
      model: "gpt",
      choices: [{ message: { content: "hi" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 3, completion_tokens: 2 },
    });
    expect(answer?.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2 });
    expect(answer?.body).toMatchObject({ id: "msg_00001111", content: [{ type: "text", text: "hi" }] });
    translator.translateStreamEvent?.(sse(chunk({ content: "x" })));
    expect(seen).toHaveLength(1);
  });

  it("follows a native Messages stream: ended at message_stop, usage with cache reads and writes counted as prompt", () => {
    const native = nativeMessages();
    native.observeStreamEvent?.(
      sse({
        type: "message_start",
        message: { usage: { input_tokens: 12, cache_read_input_tokens: 2000, cache_creation_input_tokens: 300, output_tokens: 1 } },
      }, "message_start"),
    );
    native.observeStreamEvent?.(sse({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 5 } }, "message_delta"));
    expect(native.streamProgress?.()).toEqual({
      ended: false,
      usage: { prompt_tokens: 2312, completion_tokens: 5, cached_tokens: 2000, cache_creation_tokens: 300 },
    });
    native.observeStreamEvent?.(sse({ type: "message_stop" }, "message_stop"));
    expect(native.streamProgress?.().ended).toBe(true);
  });
});
