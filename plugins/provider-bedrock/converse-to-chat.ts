/**
 * Bedrock Converse response -> chat-completions response.
 *
 * | Converse                                                   | chat completions                                   |
 * |------------------------------------------------------------|----------------------------------------------------|
 * | `output.message.content[]` `{text}` blocks                 | `choices[0].message.content` (joined; null when the answer is only tool calls) |
 * | `output.message.content[]` `{toolUse: {toolUseId, name, input}}` | `choices[0].message.tool_calls[]` {id, type:"function", function:{name, arguments: JSON string}} |
 * | `stopReason` end_turn / stop_sequence                      | `finish_reason` stop                               |
 * | `stopReason` max_tokens / model_context_window_exceeded    | length                                             |
 * | `stopReason` tool_use                                      | tool_calls                                         |
 * | `stopReason` content_filtered / guardrail_intervened       | content_filter                                     |
 * | `usage.inputTokens` + `cacheReadInputTokens` + `cacheWriteInputTokens` | `usage.prompt_tokens` (the whole prompt, however it was billed) |
 * | `usage.outputTokens`                                       | `usage.completion_tokens` (+ `total_tokens`)      |
 * | `usage.cacheReadInputTokens`                               | `usage.prompt_tokens_details.cached_tokens` (when either cache count is present) |
 *
 * Converse answers carry no id and no model: the id is made here, the model is the one the
 * request was sent to. Reasoning, citations and other blocks are not part of the chat answer.
 */
import {
  chatCompletion,
  type ChatToolCall,
  type FinishReason,
  isRecord,
  type JsonObject,
  type MessagesUsage,
  messagesUsage,
  type TranslatedResponse,
  type TranslatorContext,
} from "../../core/llm/provider.ts";

export function finishReason(stopReason: unknown): FinishReason | null {
  switch (stopReason) {
    case null:
    case undefined:
      return null;
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "content_filtered":
    case "guardrail_intervened":
      return "content_filter";
    default:
      // end_turn, stop_sequence, malformed_*, and anything newer: the model stopped.
      return "stop";
  }
}

/**
 * Converse counts cache reads and writes apart from `inputTokens`, as the Messages API does
 * with its own names: the same rule turns them into chat-completions counts.
 */
export function converseUsage(raw: unknown): MessagesUsage | undefined {
  if (!isRecord(raw)) return undefined;
  return messagesUsage({
    input_tokens: raw.inputTokens,
    output_tokens: raw.outputTokens,
    cache_read_input_tokens: raw.cacheReadInputTokens,
    cache_creation_input_tokens: raw.cacheWriteInputTokens,
  });
}

/** A chat `usage` object with `prompt_tokens_details.cached_tokens` when the backend reported cache counts. */
export function withCachedTokens(usage: unknown, counted: MessagesUsage): unknown {
  if (!isRecord(usage) || counted.cachedTokens === undefined) return usage;
  return { ...usage, prompt_tokens_details: { cached_tokens: counted.cachedTokens } };
}

export function toolCall(toolUse: JsonObject): ChatToolCall {
  return {
    id: String(toolUse.toolUseId ?? ""),
    type: "function",
    function: { name: String(toolUse.name ?? ""), arguments: JSON.stringify(toolUse.input ?? {}) },
  };
}

export function converseToChatResponse(body: unknown, context: TranslatorContext, model: string): TranslatedResponse {
  const message = isRecord(body) && isRecord(body.output) && isRecord(body.output.message) ? body.output.message : undefined;
  if (!isRecord(body) || !message || !Array.isArray(message.content)) {
    throw new Error("the backend answer is not a Converse response (no output.message.content)");
  }
  const blocks = message.content.filter(isRecord);
  const texts = blocks.filter((b) => typeof b.text === "string").map((b) => b.text as string);
  const toolCalls = blocks.filter((b) => isRecord(b.toolUse)).map((b) => toolCall(b.toolUse as JsonObject));
  const counted = converseUsage(body.usage);
  const chat = chatCompletion({
    id: `chatcmpl-${context.newId()}`,
    createdMs: context.now(),
    model,
    message: {
      role: "assistant",
      content: texts.length === 0 && toolCalls.length > 0 ? null : texts.join(""),
      ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
    },
    finishReason: finishReason(body.stopReason),
    usage: counted?.usage,
  });
  if (counted) chat.usage = withCachedTokens(chat.usage, counted);
  return { body: chat, usage: counted?.usage };
}
