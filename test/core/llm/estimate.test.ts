/**
 * The usage an LLM request is estimated at before it is sent (core/llm/estimate.ts): the
 * prompt by the body's size, the completion by its output bound (the largest, times `n`), the
 * documented default when it sets none, nothing for embeddings.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_OUTPUT_TOKENS, estimateUsage } from "../../../core/llm/estimate.ts";

describe("estimateUsage", () => {
  it("counts a token per 4 bytes of the body, rounded up, and the request's output bound", () => {
    expect(estimateUsage({ max_tokens: 7 }, 74, "/v1/chat/completions")).toEqual({ prompt_tokens: 19, completion_tokens: 7 });
    expect(estimateUsage({ max_tokens: 7 }, 76, "/v1/chat/completions")).toEqual({ prompt_tokens: 19, completion_tokens: 7 });
  });

  it("takes the largest bound set, times n choices", () => {
    expect(estimateUsage({ max_tokens: 50, max_completion_tokens: 200, n: 3 }, 40, "/v1/chat/completions").completion_tokens).toBe(600);
    expect(estimateUsage({ max_output_tokens: 64 }, 40, "/v1/responses").completion_tokens).toBe(64);
  });

  it("guesses the default output when the request sets no usable bound", () => {
    for (const body of [{}, { max_tokens: 0 }, { max_tokens: "100" }, { max_tokens: 1.5 }, { max_tokens: null, n: "2" }]) {
      expect(estimateUsage(body, 40, "/v1/messages").completion_tokens).toBe(DEFAULT_OUTPUT_TOKENS);
    }
    expect(DEFAULT_OUTPUT_TOKENS).toBe(1024);
  });

  it("guesses no completion for embeddings", () => {
    expect(estimateUsage({ input: "hello" }, 30, "/v1/embeddings")).toEqual({ prompt_tokens: 8, completion_tokens: 0 });
  });
});
