import { describe, expect, it } from "vitest";
import type { OutEvent, Translator, TranslatorContext } from "../../../core/llm/provider.ts";
import { SseParser } from "../../../core/llm/sse.ts";
import { geminiProvider } from "../../../plugins/provider-gemini/index.ts";

const context: TranslatorContext = { stream: true, now: () => Date.UTC(2026, 0, 1), newId: () => "id-1" };

/** Google's framing: `data:` lines only, CRLF CRLF between events, no [DONE]. */
const sse = (events: unknown[]) => events.map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`).join("");

interface Run {
  out: OutEvent[];
  translator: Translator;
}

/** The stream through the gateway's SSE parser and the translator, `size` characters per network chunk. */
function run(text: string, size: number, includeUsage = true): Run {
  const translator = geminiProvider.createTranslator(context);
  translator.translateRequest?.({ messages: [], stream: true, stream_options: { include_usage: includeUsage } });
  const parser = new SseParser();
  const out: OutEvent[] = [];
  for (let i = 0; i < text.length; i += size) {
    for (const event of parser.push(text.slice(i, i + size))) out.push(...(translator.translateStreamEvent?.(event) ?? []));
  }
  for (const event of parser.end()) out.push(...(translator.translateStreamEvent?.(event) ?? []));
  if (translator.streamProgress?.().ended) out.push(...(translator.translateStreamEnd?.() ?? []));
  return { out, translator };
}

const data = (events: OutEvent[]) => events.map((e) => e.data);
const envelope = { id: "resp-1", object: "chat.completion.chunk", created: Date.UTC(2026, 0, 1) / 1000, model: "gemini-2.5-flash" };
const chunk = (delta: unknown, finish: string | null = null, index = 0) => ({
  ...envelope,
  choices: [{ index, delta, logprobs: null, finish_reason: finish }],
});
const meta = { modelVersion: "gemini-2.5-flash", responseId: "resp-1" };

const textStream = sse([
  { candidates: [{ content: { role: "model", parts: [{ text: "Hel" }] }, index: 0 }], usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 }, ...meta },
  {
    candidates: [{ content: { role: "model", parts: [{ text: "Thinking...", thought: true }, { text: "lo" }] }, index: 0 }],
    usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 },
    ...meta,
  },
  {
    candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 9, cachedContentTokenCount: 4, candidatesTokenCount: 2, thoughtsTokenCount: 3, totalTokenCount: 14 },
    ...meta,
  },
]);

describe("gemini stream translation", () => {
  it("translates text events to chunks, ends with the usage chunk and [DONE], whatever the network chunk size", () => {
    const expected = [
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Hel" }),
      chunk({ content: "lo" }),
      chunk({}, "stop"),
      {
        ...envelope,
        choices: [],
        usage: {
          prompt_tokens: 9,
          completion_tokens: 5,
          total_tokens: 14,
          prompt_tokens_details: { cached_tokens: 4 },
          completion_tokens_details: { reasoning_tokens: 3 },
        },
      },
      "[DONE]",
    ];
    for (const size of [1, 2, 3, 7, 16, 61, textStream.length]) {
      const { out, translator } = run(textStream, size);
      expect(data(out), `chunks of ${size}`).toEqual(expected);
      expect(translator.streamProgress?.()).toEqual({ ended: true, usage: { prompt_tokens: 9, completion_tokens: 5, cached_tokens: 4 } });
    }
  });

  it("sends the usage chunk only when the client asked for it", () => {
    const { out } = run(textStream, 50, false);
    expect(data(out).slice(-2)).toEqual([chunk({}, "stop"), "[DONE]"]);
  });

  it("is not ended before a finish reason arrives, with the usage seen so far", () => {
    const cut = textStream.slice(0, textStream.indexOf("finishReason") - 40);
    const { translator } = run(cut, 10);
    expect(translator.streamProgress?.()).toEqual({ ended: false, usage: { prompt_tokens: 9, completion_tokens: 0 } });
  });

  it("streams function calls whole as tool_calls deltas with their thought signature, finish tool_calls", () => {
    const stream = sse([
      { candidates: [{ content: { role: "model", parts: [{ text: "Let me look." }] }, index: 0 }], ...meta },
      {
        candidates: [
          {
            content: {
              role: "model",
              parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "sig" }, { functionCall: { name: "now", args: {} } }],
            },
            finishReason: "STOP",
            index: 0,
          },
        ],
        usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 2 },
        ...meta,
      },
    ]);
    expect(data(run(stream, 5, false).out)).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "Let me look." }),
      chunk({
        tool_calls: [{
          index: 0,
          id: "call_id-1",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          extra_content: { google: { thought_signature: "sig" } },
        }],
      }),
      chunk({ tool_calls: [{ index: 1, id: "call_id-1", type: "function", function: { name: "now", arguments: "{}" } }] }),
      chunk({}, "tool_calls"),
      "[DONE]",
    ]);
  });

  it("keeps each candidate on its own choice index and ends when all finished (n > 1)", () => {
    const stream = sse([
      { candidates: [{ content: { parts: [{ text: "a" }] }, index: 0 }, { content: { parts: [{ text: "b" }] }, index: 1 }], ...meta },
      { candidates: [{ content: { parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }], ...meta },
    ]);
    const first = run(stream, 1000, false);
    expect(data(first.out)).toEqual([
      chunk({ role: "assistant", content: "" }),
      chunk({ content: "a" }),
      chunk({ role: "assistant", content: "" }, null, 1),
      chunk({ content: "b" }, null, 1),
      chunk({}, "stop"),
    ]);
    expect(first.translator.streamProgress?.().ended).toBe(false);
    const both = run(stream + sse([{ candidates: [{ content: { parts: [{ text: "" }] }, finishReason: "MAX_TOKENS", index: 1 }], ...meta }]), 1000, false);
    expect(data(both.out).slice(-2)).toEqual([chunk({}, "length", 1), "[DONE]"]);
    expect(both.translator.streamProgress?.().ended).toBe(true);
  });

  it("turns a prompt blocked in the first event into the 400 body as an error event, and ends", () => {
    const { out, translator } = run(sse([{ promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 5 }, ...meta }]), 8);
    expect(data(out)).toEqual([
      {
        error: {
          message: "the backend's safety filters blocked the prompt (blockReason SAFETY); change the prompt and send it again",
          type: "invalid_request_error",
          code: "content_filter",
        },
      },
    ]);
    expect(translator.streamProgress?.().ended).toBe(true);
  });

  it("turns an error event into a chat error event, and ends", () => {
    const { out, translator } = run(sse([{ error: { code: 503, message: "The model is overloaded. Please try again later.", status: "UNAVAILABLE" } }]), 8);
    expect(data(out)).toEqual([{ error: { message: "The model is overloaded. Please try again later.", type: "backend_error", code: "UNAVAILABLE" } }]);
    expect(translator.streamProgress?.().ended).toBe(true);
  });
});
