/**
 * Prompt caching through the messages_api translation: `cache_control` markers reach the
 * backend where the client put them, and the cache counts of the answer come back as the
 * chat-completions usage (whole prompt in `prompt_tokens`, cache reads in `cached_tokens`).
 */
import { describe, expect, it } from "vitest";
import type { OutEvent, StreamEvent, Translator, TranslatorContext } from "../../../core/llm/provider.ts";
import { chatToMessagesRequest } from "../../../plugins/provider-messages-api/chat-to-messages.ts";
import { messagesApiProvider } from "../../../plugins/provider-messages-api/index.ts";

const EPHEMERAL = { type: "ephemeral" };
const ONE_HOUR = { type: "ephemeral", ttl: "1h" };
const context: TranslatorContext = { stream: false, now: () => Date.UTC(2026, 0, 1), newId: () => "id-1" };
const translator = (): Translator => messagesApiProvider.createTranslator(context);

describe("messages_api request translation keeps cache_control", () => {
  it("sends system text as blocks, markers kept, once a system part carries one", () => {
    const out = chatToMessagesRequest({
      system: "From the field.",
      messages: [
        { role: "system", content: [{ type: "text", text: "Long instructions", cache_control: EPHEMERAL }, { type: "text", text: "" }] },
        { role: "developer", content: "Be brief.", cache_control: ONE_HOUR },
        { role: "user", content: "hi" },
      ],
    });
    expect(out.system).toEqual([
      { type: "text", text: "From the field." },
      { type: "text", text: "Long instructions", cache_control: EPHEMERAL },
      { type: "text", text: "Be brief.", cache_control: ONE_HOUR },
    ]);
  });

  it("keeps the system string when no system part carries a marker", () => {
    const out = chatToMessagesRequest({
      messages: [{ role: "system", content: "A" }, { role: "user", content: [{ type: "text", text: "hi", cache_control: EPHEMERAL }] }],
    });
    expect(out.system).toBe("A");
  });

  it("keeps markers on text and image parts, and puts a message's own marker on its last block", () => {
    const out = chatToMessagesRequest({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "a document", cache_control: EPHEMERAL },
            { type: "image_url", image_url: { url: "data:image/png;base64,AAA" }, cache_control: ONE_HOUR },
            { type: "text", text: "question" },
          ],
        },
        { role: "assistant", content: "answer", cache_control: EPHEMERAL },
        { role: "user", content: "next", cache_control: EPHEMERAL },
        { role: "user", content: "plain" },
      ],
    });
    expect(out.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "a document", cache_control: EPHEMERAL },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "AAA" }, cache_control: ONE_HOUR },
          { type: "text", text: "question" },
        ],
      },
      { role: "assistant", content: [{ type: "text", text: "answer", cache_control: EPHEMERAL }] },
      { role: "user", content: [{ type: "text", text: "next", cache_control: EPHEMERAL }] },
      { role: "user", content: "plain" },
    ]);
  });

  it("keeps a tool result's marker on its tool_result block", () => {
    const out = chatToMessagesRequest({
      messages: [
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: [{ type: "text", text: "big result", cache_control: EPHEMERAL }] },
      ],
    });
    expect((out.messages as Array<{ content: unknown }>)[1].content).toEqual([{
      type: "tool_result",
      tool_use_id: "c1",
      content: "big result",
      cache_control: EPHEMERAL,
    }]);
  });

  it("moves a tool object's marker onto the translated tool; tools in the Messages shape keep theirs", () => {
    const out = chatToMessagesRequest({
      messages: [],
      tools: [
        { type: "function", function: { name: "f", parameters: { type: "object" } } },
        { type: "function", function: { name: "g", parameters: { type: "object" } }, cache_control: EPHEMERAL },
        { name: "native", input_schema: { type: "object" }, cache_control: ONE_HOUR },
      ],
    });
    expect(out.tools).toEqual([
      { name: "f", input_schema: { type: "object" } },
      { name: "g", input_schema: { type: "object" }, cache_control: EPHEMERAL },
      { name: "native", input_schema: { type: "object" }, cache_control: ONE_HOUR },
    ]);
  });
});

describe("messages_api usage with prompt-cache counts", () => {
  const answer = (usage: Record<string, unknown>) => ({ id: "msg_1", model: "m", content: [{ type: "text", text: "ok" }], stop_reason: "end_turn", usage });

  it("counts cache reads and writes in prompt_tokens and reports the reads as cached_tokens", () => {
    const out = translator().translateResponse?.(
      answer({ input_tokens: 12, cache_creation_input_tokens: 300, cache_read_input_tokens: 2000, output_tokens: 5 }),
    );
    // The reads and writes are also kept apart, so they can be priced at their own rates (pricing).
    expect(out?.usage).toEqual({ prompt_tokens: 2312, completion_tokens: 5, cached_tokens: 2000, cache_creation_tokens: 300 });
    expect(out?.body.usage).toEqual({ prompt_tokens: 2312, completion_tokens: 5, total_tokens: 2317, prompt_tokens_details: { cached_tokens: 2000 } });
  });

  it("reports cached_tokens 0 for a cache write, and no details when the backend sent no cache counts", () => {
    const write = translator().translateResponse?.(answer({ input_tokens: 12, cache_creation_input_tokens: 300, output_tokens: 5 }));
    expect(write?.body.usage).toEqual({ prompt_tokens: 312, completion_tokens: 5, total_tokens: 317, prompt_tokens_details: { cached_tokens: 0 } });
    const plain = translator().translateResponse?.(answer({ input_tokens: 12, output_tokens: 5 }));
    expect(plain?.body.usage).toEqual({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 });
  });

  it("puts the same sums in a stream's usage chunk, from message_start's counts", () => {
    const t = messagesApiProvider.createTranslator({ ...context, stream: true });
    t.translateRequest?.({ messages: [], stream: true, stream_options: { include_usage: true } });
    const events: StreamEvent[] = [
      {
        json: {
          type: "message_start",
          message: { id: "msg_1", model: "m", usage: { input_tokens: 12, cache_creation_input_tokens: 300, cache_read_input_tokens: 2000, output_tokens: 1 } },
        },
      },
      { json: { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 5 } } },
      { json: { type: "message_stop" } },
    ].map((e) => ({ data: JSON.stringify(e.json), json: e.json }));
    const out: OutEvent[] = events.flatMap((e) => t.translateStreamEvent?.(e) ?? []);
    const usageChunk = out.map((e) => e.data).find((d) => typeof d === "object" && d !== null && "usage" in d) as { usage: unknown } | undefined;
    expect(usageChunk?.usage).toEqual({ prompt_tokens: 2312, completion_tokens: 5, total_tokens: 2317, prompt_tokens_details: { cached_tokens: 2000 } });
  });
});
