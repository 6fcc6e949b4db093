import { describe, expect, it } from "vitest";
import { NdjsonParser } from "../../../core/llm/ndjson.ts";
import type { OutEvent, Translator, TranslatorContext } from "../../../core/llm/provider.ts";
import { chatToLocalRequest } from "../../../plugins/provider-local-chat/chat-to-local.ts";
import { localChatProvider } from "../../../plugins/provider-local-chat/index.ts";

let ids = 0;
const context: TranslatorContext = { stream: false, now: () => Date.UTC(2026, 0, 1), newId: () => `id-${++ids}` };
const translator = (): Translator => localChatProvider.createTranslator(context);

describe("local_chat request translation", () => {
  it("always sets stream, maps options, stop, limits and response_format", () => {
    expect(chatToLocalRequest({ model: "m", messages: [{ role: "user", content: "hi" }] })).toEqual({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      stream: false,
    });
    expect(
      chatToLocalRequest({
        model: "m",
        messages: [],
        stream: true,
        temperature: 0.3,
        seed: 4,
        stop: ["a"],
        max_completion_tokens: 5,
        max_tokens: 9,
        response_format: { type: "json_object" },
        user: "dropped",
      }),
    ).toEqual({ model: "m", messages: [], stream: true, options: { temperature: 0.3, seed: 4, stop: ["a"], num_predict: 5 }, format: "json" });
  });

  it("joins text parts, moves data: images to images[], and maps tool calls and results", () => {
    const out = chatToLocalRequest({
      model: "m",
      messages: [
        { role: "developer", content: "be brief" },
        { role: "user", content: [{ type: "text", text: "look: " }, { type: "image_url", image_url: { url: "data:image/jpeg;base64,QUJD" } }] },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"a":1}' } }] },
        { role: "tool", tool_call_id: "c1", content: "42" },
      ],
    });
    expect(out.messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "look: ", images: ["QUJD"] },
      { role: "assistant", content: "", tool_calls: [{ function: { name: "f", arguments: { a: 1 } } }] },
      { role: "tool", content: "42", tool_name: "f" },
    ]);
  });

  it("refuses remote image URLs, which the runtime cannot fetch", () => {
    expect(() => chatToLocalRequest({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x.test/a.png" } }] }] })).toThrow(
      "data: URLs",
    );
  });
});

describe("local_chat response translation", () => {
  const answer = {
    model: "m",
    created_at: "2026-02-03T04:05:06Z",
    message: { role: "assistant", content: "yo" },
    done: true,
    done_reason: "stop",
    prompt_eval_count: 5,
    eval_count: 2,
  };

  it("answers in the chat-completions format with usage from the counts", () => {
    const out = translator().translateResponse?.(answer);
    expect(out?.usage).toEqual({ prompt_tokens: 5, completion_tokens: 2 });
    expect(out?.body).toMatchObject({
      object: "chat.completion",
      created: Date.UTC(2026, 1, 3, 4, 5, 6) / 1000,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "yo" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
  });

  it("maps length and tool calls, and keeps usage unknown without the prompt count", () => {
    expect(
      (translator().translateResponse?.({ ...answer, done_reason: "length" }).body as { choices: Array<{ finish_reason: string }> }).choices[0].finish_reason,
    ).toBe("length");
    const { prompt_eval_count: _, ...uncounted } = answer;
    expect(translator().translateResponse?.(uncounted).usage).toBeUndefined();
    const tool = translator().translateResponse?.({
      ...answer,
      message: { role: "assistant", content: "", tool_calls: [{ function: { name: "f", arguments: { a: 1 } } }] },
    });
    const choice = (tool?.body as { choices: Array<{ finish_reason: string; message: { tool_calls: unknown } }> }).choices[0];
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.tool_calls).toEqual([{ id: expect.stringMatching(/^call_/), type: "function", function: { name: "f", arguments: '{"a":1}' } }]);
  });

  it("translates the runtime's error body", () => {
    expect(translator().translateError?.(404, { error: "model 'x' not found" })).toEqual({
      error: { message: "model 'x' not found", type: "not_found_error" },
    });
  });

  it("translates an NDJSON stream into chunks, a finish chunk, usage and [DONE]", () => {
    const t = translator();
    t.translateRequest?.({ model: "m", messages: [], stream: true, stream_options: { include_usage: true } });
    const parser = new NdjsonParser();
    const lines = [
      { model: "m", created_at: answer.created_at, message: { role: "assistant", content: "a" }, done: false },
      { model: "m", created_at: answer.created_at, message: { role: "assistant", content: "b" }, done: false },
      { ...answer, message: { role: "assistant", content: "" } },
    ].map((l) => `${JSON.stringify(l)}\n`).join("");
    const out: OutEvent[] = [...parser.push(lines), ...parser.end()].flatMap((e) => t.translateStreamEvent?.(e) ?? []);
    out.push(...(t.translateStreamEnd?.() ?? []));
    expect(out[out.length - 1]).toEqual({ data: "[DONE]" });
    const chunks = out.slice(0, -1).map((e) => e.data as { choices: Array<{ delta: unknown; finish_reason: string | null }>; usage?: unknown });
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([{ role: "assistant", content: "" }, { content: "a" }, { content: "b" }, {}, undefined]);
    expect(chunks[3].choices[0].finish_reason).toBe("stop");
    expect(chunks[4].usage).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
  });

  it("reports a stream as ended only at its done line, with that line's counts", () => {
    const t = translator();
    t.translateStreamEvent?.({ data: "{}", json: { model: "m", message: { content: "a" }, done: false } });
    expect(t.streamProgress?.()).toEqual({ ended: false, usage: undefined });
    t.translateStreamEvent?.({ data: "{}", json: { model: "m", message: { content: "" }, done: true, prompt_eval_count: 5, eval_count: 2 } });
    expect(t.streamProgress?.()).toEqual({ ended: true, usage: { prompt_tokens: 5, completion_tokens: 2 } });
  });
});
