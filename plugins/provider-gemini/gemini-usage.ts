/**
 * Gemini's `usageMetadata` as the chat-completions format counts it.
 *
 * | Gemini `usageMetadata`                          | chat completions                                   |
 * |-------------------------------------------------|----------------------------------------------------|
 * | `promptTokenCount` + `toolUsePromptTokenCount`  | `prompt_tokens` (the cached content is already in `promptTokenCount`) |
 * | `candidatesTokenCount` + `thoughtsTokenCount`   | `completion_tokens` (thinking is billed as output) |
 * | `cachedContentTokenCount`                       | `prompt_tokens_details.cached_tokens` (and `cached_tokens` of the usage) |
 * | `thoughtsTokenCount`                            | `completion_tokens_details.reasoning_tokens`       |
 * | `totalTokenCount`                               | not read: `total_tokens` is the sum of the two above, which it equals |
 *
 * Google's JSON leaves out counts that are zero (proto3), so an absent candidates, thoughts or
 * tool count is 0 once the prompt count is there; without a prompt count the usage is unknown.
 */
import { isRecord, type JsonObject, type TokenUsage } from "../../core/llm/provider.ts";

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0;
const countOf = (value: unknown) => (isCount(value) ? value : 0);

export interface GeminiUsage {
  usage: TokenUsage;
  reasoningTokens: number;
}

export function geminiUsage(raw: unknown): GeminiUsage | undefined {
  if (!isRecord(raw) || !isCount(raw.promptTokenCount)) return undefined;
  const reasoningTokens = countOf(raw.thoughtsTokenCount);
  const usage: TokenUsage = {
    prompt_tokens: raw.promptTokenCount + countOf(raw.toolUsePromptTokenCount),
    completion_tokens: countOf(raw.candidatesTokenCount) + reasoningTokens,
  };
  if (isCount(raw.cachedContentTokenCount)) usage.cached_tokens = raw.cachedContentTokenCount;
  return { usage, reasoningTokens };
}

/** The `usage` object of a chat-completions body or usage chunk. */
export function chatUsage(counted: GeminiUsage): JsonObject {
  const { usage, reasoningTokens } = counted;
  const out: JsonObject = {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.prompt_tokens + usage.completion_tokens,
  };
  if (usage.cached_tokens !== undefined) out.prompt_tokens_details = { cached_tokens: usage.cached_tokens };
  if (reasoningTokens > 0) out.completion_tokens_details = { reasoning_tokens: reasoningTokens };
  return out;
}
