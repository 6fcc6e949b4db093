/**
 * A chat-completions answer -> the Messages answer a Messages client expects.
 *
 * | chat completions                                   | Messages                                        |
 * |----------------------------------------------------|-------------------------------------------------|
 * | `choices[0].message.content`                       | one `text` block (none when empty)              |
 * | `choices[0].message.tool_calls[]`                  | `tool_use` blocks {id, name, input: parsed arguments} |
 * | `finish_reason` stop / length / tool_calls / content_filter | `stop_reason` end_turn / max_tokens / tool_use / refusal |
 * | `usage.prompt_tokens` (minus `prompt_tokens_details.cached_tokens`) | `usage.input_tokens` (+ `cache_read_input_tokens`) |
 * | `usage.completion_tokens`                          | `usage.output_tokens`                           |
 * | error `{error:{message, type}}`                    | `{type:"error", error:{type, message}}`, the status kept |
 */
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import { messagesError, messagesErrorType, stopReasonOf } from "../../core/llm/messages.ts";

/** Tool arguments as an object: a chat backend sends a JSON string, sometimes not valid JSON. */
export function toolInput(args: unknown): unknown {
  if (isRecord(args)) return args;
  if (typeof args !== "string" || args.trim() === "") return {};
  try {
    return JSON.parse(args);
  } catch {
    return { arguments: args };
  }
}

/** A chat `usage` as Messages counts it (`input_tokens` without the cached prefix); undefined when it has none. */
export function messagesUsageOf(usage: unknown): JsonObject | undefined {
  if (!isRecord(usage) || typeof usage.prompt_tokens !== "number") return undefined;
  const cached = isRecord(usage.prompt_tokens_details) && typeof usage.prompt_tokens_details.cached_tokens === "number"
    ? usage.prompt_tokens_details.cached_tokens
    : undefined;
  const out: JsonObject = {
    input_tokens: Math.max(0, usage.prompt_tokens - (cached ?? 0)),
    output_tokens: typeof usage.completion_tokens === "number" ? usage.completion_tokens : 0,
  };
  if (cached !== undefined) out.cache_read_input_tokens = cached;
  return out;
}

export function chatToMessagesResponse(body: unknown, messageId: () => string): JsonObject {
  if (!isRecord(body) || !Array.isArray(body.choices)) throw new Error("the backend answer is not a chat completion (no choices array)");
  const choice = isRecord(body.choices[0]) ? body.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const content: JsonObject[] = [];
  if (typeof message.content === "string" && message.content !== "") content.push({ type: "text", text: message.content });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      const fn = isRecord(call) && isRecord(call.function) ? call.function : {};
      content.push({ type: "tool_use", id: isRecord(call) ? String(call.id ?? "") : "", name: String(fn.name ?? ""), input: toolInput(fn.arguments) });
    }
  }
  return {
    id: typeof body.id === "string" && body.id !== "" ? body.id : messageId(),
    type: "message",
    role: "assistant",
    model: typeof body.model === "string" ? body.model : "",
    content,
    stop_reason: stopReasonOf(choice.finish_reason),
    stop_sequence: null,
    usage: messagesUsageOf(body.usage) ?? { input_tokens: 0, output_tokens: 0 },
  };
}

/** A chat error body (or any backend error body) as a Messages error, for `status`. */
export function chatToMessagesError(status: number, body: unknown): JsonObject {
  if (isRecord(body) && body.type === "error" && isRecord(body.error)) return body;
  const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  const message = typeof error?.message === "string"
    ? error.message
    : typeof body === "string" && body.trim() !== ""
    ? body.trim()
    : `the backend answered HTTP ${status}`;
  return messagesError(messagesErrorType(status, error?.type), message);
}
