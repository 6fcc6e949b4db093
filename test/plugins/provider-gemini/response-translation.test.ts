import { describe, expect, it } from "vitest";
import type { TranslatorContext } from "../../../core/llm/provider.ts";
import { geminiToChatResponse } from "../../../plugins/provider-gemini/gemini-to-chat.ts";
import { geminiProvider } from "../../../plugins/provider-gemini/index.ts";
import { PromptBlockedError } from "../../../plugins/provider-gemini/prompt-block.ts";

let ids = 0;
const context: TranslatorContext = { stream: false, now: () => Date.UTC(2026, 0, 1), newId: () => `id-${++ids}` };

const answer = (candidate: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: "model", parts: [{ text: "Hello" }, { text: " there" }] }, finishReason: "STOP", index: 0, ...candidate }],
  usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 4, totalTokenCount: 14 },
  modelVersion: "gemini-2.5-flash",
  responseId: "resp-1",
  ...extra,
});

describe("gemini response translation", () => {
  it("joins text parts, maps usage, keeps the response id and model version", () => {
    const out = geminiProvider.createTranslator(context).translateResponse?.(answer({}));
    expect(out?.usage).toEqual({ prompt_tokens: 10, completion_tokens: 4 });
    expect(out?.body).toEqual({
      id: "resp-1",
      object: "chat.completion",
      created: Date.UTC(2026, 0, 1) / 1000,
      model: "gemini-2.5-flash",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello there" }, logprobs: null, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
    });
  });

  it.each([
    ["STOP", "stop"],
    ["MAX_TOKENS", "length"],
    ["SAFETY", "content_filter"],
    ["RECITATION", "content_filter"],
    ["BLOCKLIST", "content_filter"],
    ["PROHIBITED_CONTENT", "content_filter"],
    ["SPII", "content_filter"],
    ["IMAGE_SAFETY", "content_filter"],
    ["OTHER", "stop"],
    ["MALFORMED_FUNCTION_CALL", "stop"],
    ["FINISH_REASON_UNSPECIFIED", "stop"],
  ])("maps finishReason %s to %s", (reason, finish) => {
    const body = geminiToChatResponse(answer({ finishReason: reason }), context).body as { choices: Array<{ finish_reason: string }> };
    expect(body.choices[0].finish_reason).toBe(finish);
  });

  it("turns functionCall parts into tool_calls (Gemini's id, else a new one), with the thought signature, finish tool_calls", () => {
    const out = geminiToChatResponse(
      answer({
        content: {
          role: "model",
          parts: [
            { functionCall: { id: "fc-1", name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "sig-1" },
            { functionCall: { name: "now" } },
          ],
        },
      }),
      context,
    );
    const choice = (out.body.choices as Array<Record<string, unknown>>)[0];
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: "fc-1",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          extra_content: { google: { thought_signature: "sig-1" } },
        },
        { id: expect.stringMatching(/^call_id-\d+$/), type: "function", function: { name: "now", arguments: "{}" } },
      ],
    });
  });

  it("leaves thought summaries out of the content and counts thinking as completion (reasoning) tokens, cached tokens as prompt details", () => {
    const out = geminiToChatResponse(
      answer(
        { content: { role: "model", parts: [{ text: "Let me think", thought: true }, { text: "42" }] } },
        {
          usageMetadata: {
            promptTokenCount: 100,
            cachedContentTokenCount: 60,
            candidatesTokenCount: 2,
            thoughtsTokenCount: 30,
            toolUsePromptTokenCount: 5,
            totalTokenCount: 137,
          },
        },
      ),
      context,
    );
    expect((out.body.choices as Array<{ message: unknown }>)[0].message).toEqual({ role: "assistant", content: "42" });
    expect(out.usage).toEqual({ prompt_tokens: 105, completion_tokens: 32, cached_tokens: 60 });
    expect(out.body.usage).toEqual({
      prompt_tokens: 105,
      completion_tokens: 32,
      total_tokens: 137,
      prompt_tokens_details: { cached_tokens: 60 },
      completion_tokens_details: { reasoning_tokens: 30 },
    });
  });

  it("counts a candidate count Google left out (it omits zeros) as 0, and no usage at all as unknown", () => {
    expect(
      geminiToChatResponse(answer({ content: { parts: [] }, finishReason: "SAFETY" }, { usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 } }), context)
        .usage,
    ).toEqual({
      prompt_tokens: 7,
      completion_tokens: 0,
    });
    const unknown = geminiToChatResponse(answer({}, { usageMetadata: undefined }), context);
    expect(unknown.usage).toBeUndefined();
    expect(unknown.body.usage).toBeUndefined();
  });

  it("answers one choice per candidate (n > 1)", () => {
    const out = geminiToChatResponse(
      {
        candidates: [
          { content: { parts: [{ text: "a" }] }, finishReason: "STOP", index: 0 },
          { content: { parts: [{ text: "b" }] }, finishReason: "MAX_TOKENS", index: 1 },
        ],
        usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2 },
      },
      context,
    );
    expect(out.body.choices).toEqual([
      { index: 0, message: { role: "assistant", content: "a" }, logprobs: null, finish_reason: "stop" },
      { index: 1, message: { role: "assistant", content: "b" }, logprobs: null, finish_reason: "length" },
    ]);
    expect(out.body.id).toMatch(/^chatcmpl-id-\d+$/);
  });

  it("turns a prompt blocked for safety into a 400 content_filter error", () => {
    const blocked = { promptFeedback: { blockReason: "SAFETY", safetyRatings: [] }, usageMetadata: { promptTokenCount: 5 } };
    let thrown: unknown;
    try {
      geminiToChatResponse(blocked, context);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PromptBlockedError);
    const error = thrown as PromptBlockedError;
    expect(error.status).toBe(400);
    expect(error.body).toEqual({
      error: {
        message: "the backend's safety filters blocked the prompt (blockReason SAFETY); change the prompt and send it again",
        type: "invalid_request_error",
        code: "content_filter",
      },
    });
    // Vertex AI says why in words.
    expect(() =>
      geminiToChatResponse({ promptFeedback: { blockReason: "PROHIBITED_CONTENT", blockReasonMessage: "The prompt contains prohibited content." } }, context)
    ).toThrow(
      "(blockReason PROHIBITED_CONTENT: The prompt contains prohibited content.)",
    );
  });

  it("refuses an answer that is not a GenerateContentResponse", () => {
    expect(() => geminiToChatResponse([], context)).toThrow("the backend answer is not a Gemini GenerateContentResponse (not an object)");
    expect(() => geminiToChatResponse({ candidates: [] }, context)).toThrow("the backend answer is not a Gemini GenerateContentResponse (no candidates)");
  });
});
