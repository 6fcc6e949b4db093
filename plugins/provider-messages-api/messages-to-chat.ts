/**
 * Messages-style response -> chat-completions response (docs/design.md#messages-translation).
 *
 * | Messages-style                                  | chat completions                                  |
 * |-------------------------------------------------|---------------------------------------------------|
 * | `content[]` `text` blocks                       | `choices[0].message.content` (joined; null when the answer is only tool calls) |
 * | `content[]` `tool_use` blocks {id, name, input} | `choices[0].message.tool_calls[]` {id, type:"function", function:{name, arguments: JSON string}} |
 * | `stop_reason` end_turn / stop_sequence / pause_turn | `finish_reason` stop                          |
 * | `stop_reason` max_tokens                        | length                                            |
 * | `stop_reason` tool_use                          | tool_calls                                        |
 * | `stop_reason` refusal                           | content_filter                                    |
 * | `usage.input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` | `usage.prompt_tokens` (what the prompt was, however it was billed) |
 * | `usage.output_tokens`                           | `usage.completion_tokens` (+ `total_tokens`)     |
 * | `usage.cache_read_input_tokens`                 | `usage.prompt_tokens_details.cached_tokens` (when either cache count is present) |
 * | `id`, `model`                                   | the same                                          |
 * | error body `{type:"error", error:{type, message}}` | `{error:{message, type}}`                      |
 *
 * Other blocks (thinking, ...) are not part of the chat-completions answer and are left out.
 */
import { finishReasonOf, toolCallOf } from "../../core/llm/messages.ts";
import {
  chatCompletion,
  chatError,
  errorTypeFor,
  isRecord,
  type JsonObject,
  messagesUsage,
  type TranslatedResponse,
  type TranslatorContext,
} from "../../core/llm/provider.ts";

/** Adds `prompt_tokens_details.cached_tokens` to a chat-completions `usage` object that `withTotal` built. */
export function withCachedTokens<T extends object>(usage: T, cachedTokens: number | undefined): T | (T & { prompt_tokens_details: { cached_tokens: number } }) {
  return cachedTokens === undefined ? usage : { ...usage, prompt_tokens_details: { cached_tokens: cachedTokens } };
}

export function messagesToChatResponse(body: unknown, context: TranslatorContext): TranslatedResponse {
  if (!isRecord(body) || !Array.isArray(body.content)) {
    throw new Error("the backend answer is not a Messages-style message (no content array)");
  }
  const blocks = body.content.filter(isRecord);
  const texts = blocks.filter((b) => b.type === "text").map((b) => (typeof b.text === "string" ? b.text : ""));
  const toolCalls = blocks.filter((b) => b.type === "tool_use").map(toolCallOf);
  const counted = messagesUsage(body.usage);
  const usage = counted?.usage;
  const chat = chatCompletion({
    id: typeof body.id === "string" ? body.id : `chatcmpl-${context.newId()}`,
    createdMs: context.now(),
    model: body.model,
    message: {
      role: "assistant",
      content: texts.length === 0 && toolCalls.length > 0 ? null : texts.join(""),
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    },
    finishReason: finishReasonOf(body.stop_reason),
    usage,
  });
  if (counted && isRecord(chat.usage)) chat.usage = withCachedTokens(chat.usage, counted.cachedTokens);
  return { body: chat, usage };
}

export function messagesToChatError(status: number, body: unknown): JsonObject {
  if (isRecord(body) && isRecord(body.error) && typeof body.error.message === "string") {
    return chatError(body.error.message, typeof body.error.type === "string" ? body.error.type : errorTypeFor(status));
  }
  const text = typeof body === "string" && body.trim() !== "" ? body.trim() : `the backend answered HTTP ${status}`;
  return chatError(text, errorTypeFor(status));
}
