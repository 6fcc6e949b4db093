import { describe, expect, it } from "vitest";
import type { Translator, TranslatorContext } from "../../../core/llm/provider.ts";
import { finishReason } from "../../../plugins/provider-bedrock/converse-to-chat.ts";
import { bedrockProvider } from "../../../plugins/provider-bedrock/index.ts";

const context: TranslatorContext = { stream: false, now: () => Date.UTC(2026, 0, 1), newId: () => "id-1" };
const MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0";

/** A translator that has sent a request for MODEL, as the gateway drives it. */
function translator(): Translator {
  const t = bedrockProvider.createTranslator(context);
  t.translateRequest?.({ model: MODEL, messages: [{ role: "user", content: "hi" }] });
  return t;
}

const converse = (content: unknown[], stopReason: string, usage: Record<string, number>) => ({
  output: { message: { role: "assistant", content } },
  stopReason,
  usage,
  metrics: { latencyMs: 42 },
});

describe("bedrock response translation (Converse -> chat completions)", () => {
  it("turns text blocks into the message content, with usage and the model the request went to", () => {
    const { body, usage } = translator().translateResponse!(
      converse([{ text: "Hello " }, { text: "there." }], "end_turn", { inputTokens: 12, outputTokens: 5, totalTokens: 17 }),
    );
    expect(body).toEqual({
      id: "chatcmpl-id-1",
      object: "chat.completion",
      created: Date.UTC(2026, 0, 1) / 1000,
      model: MODEL,
      choices: [{ index: 0, message: { role: "assistant", content: "Hello there." }, logprobs: null, finish_reason: "stop" }],
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
    });
    expect(usage).toEqual({ prompt_tokens: 12, completion_tokens: 5 });
  });

  it("turns toolUse blocks into tool_calls (content null when there is no text)", () => {
    const { body } = translator().translateResponse!(
      converse([{ toolUse: { toolUseId: "tooluse_1", name: "weather", input: { city: "Paris" } } }], "tool_use", {
        inputTokens: 1,
        outputTokens: 2,
        totalTokens: 3,
      }),
    );
    expect((body.choices as unknown[])[0]).toEqual({
      index: 0,
      message: {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "tooluse_1", type: "function", function: { name: "weather", arguments: '{"city":"Paris"}' } }],
      },
      logprobs: null,
      finish_reason: "tool_calls",
    });
  });

  it("counts cache reads and writes as prompt tokens and reports the reads as cached_tokens", () => {
    const { body, usage } = translator().translateResponse!(
      converse([{ text: "ok" }], "end_turn", { inputTokens: 12, outputTokens: 5, totalTokens: 2317, cacheReadInputTokens: 2000, cacheWriteInputTokens: 300 }),
    );
    expect(usage).toEqual({ prompt_tokens: 2312, completion_tokens: 5, cached_tokens: 2000, cache_creation_tokens: 300 });
    expect(body.usage).toEqual({ prompt_tokens: 2312, completion_tokens: 5, total_tokens: 2317, prompt_tokens_details: { cached_tokens: 2000 } });
    // A cache write alone still says how many were read (none).
    const written = translator().translateResponse!(
      converse([{ text: "ok" }], "end_turn", { inputTokens: 1, outputTokens: 1, totalTokens: 12, cacheWriteInputTokens: 10 }),
    );
    expect(written.body.usage).toEqual({ prompt_tokens: 11, completion_tokens: 1, total_tokens: 12, prompt_tokens_details: { cached_tokens: 0 } });
  });

  it("leaves usage unknown (not zero) when the answer has none", () => {
    const { body, usage } = translator().translateResponse!({ output: { message: { role: "assistant", content: [{ text: "x" }] } }, stopReason: "end_turn" });
    expect(usage).toBeUndefined();
    expect(body).not.toHaveProperty("usage");
  });

  it("maps every stop reason", () => {
    expect(finishReason("end_turn")).toBe("stop");
    expect(finishReason("stop_sequence")).toBe("stop");
    expect(finishReason("max_tokens")).toBe("length");
    expect(finishReason("model_context_window_exceeded")).toBe("length");
    expect(finishReason("tool_use")).toBe("tool_calls");
    expect(finishReason("content_filtered")).toBe("content_filter");
    expect(finishReason("guardrail_intervened")).toBe("content_filter");
    expect(finishReason("malformed_tool_use")).toBe("stop");
    expect(finishReason(undefined)).toBeNull();
  });

  it("refuses an answer that is not a Converse response", () => {
    expect(() => translator().translateResponse!({ choices: [] })).toThrow("the backend answer is not a Converse response (no output.message.content)");
  });
});
