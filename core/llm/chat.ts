/**
 * Builders for the chat-completions shapes every translator produces, so each provider
 * writes "what the answer says" and not the envelope (shared helpers instead of copies).
 */
import type { OutEvent } from "./events.ts";
import { isRecord, type JsonObject } from "./json.ts";
import type { TokenUsage } from "./usage.ts";

export type FinishReason = "stop" | "length" | "tool_calls" | "content_filter";

export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: "assistant";
  content: string | null;
  tool_calls?: ChatToolCall[];
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** A `chat.completion` body with one choice. */
export function chatCompletion(fields: {
  id: string;
  createdMs: number;
  model: unknown;
  message: ChatMessage;
  finishReason: FinishReason | null;
  usage: TokenUsage | undefined;
}): JsonObject {
  const body: JsonObject = {
    id: fields.id,
    object: "chat.completion",
    created: seconds(fields.createdMs),
    model: typeof fields.model === "string" ? fields.model : "",
    choices: [{ index: 0, message: fields.message, logprobs: null, finish_reason: fields.finishReason }],
  };
  if (fields.usage) body.usage = withTotal(fields.usage);
  return body;
}

export interface ChunkEnvelope {
  id: string;
  createdMs: number;
  model: string;
}

/** A `chat.completion.chunk` event with one choice delta. */
export function chatChunk(envelope: ChunkEnvelope, delta: JsonObject, finishReason: FinishReason | null = null): OutEvent {
  return {
    data: {
      id: envelope.id,
      object: "chat.completion.chunk",
      created: seconds(envelope.createdMs),
      model: envelope.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    },
  };
}

/** The final usage chunk of a stream that asked for `stream_options.include_usage` (empty `choices`). */
export function usageChunk(envelope: ChunkEnvelope, usage: TokenUsage): OutEvent {
  return {
    data: {
      id: envelope.id,
      object: "chat.completion.chunk",
      created: seconds(envelope.createdMs),
      model: envelope.model,
      choices: [],
      usage: withTotal(usage),
    },
  };
}

/** The end-of-stream marker of the chat-completions protocol. */
export const DONE: OutEvent = { data: "[DONE]" };

export function withTotal(usage: TokenUsage): TokenUsage & { total_tokens: number } {
  return { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.prompt_tokens + usage.completion_tokens };
}

/** Did the (already translated) client request ask for the usage chunk at the end of a stream? */
export function wantsStreamUsage(body: JsonObject): boolean {
  return isRecord(body.stream_options) && body.stream_options.include_usage === true;
}

/** A chat-completions error body (`{"error":{"message","type"}}`) with the same shape as the gateway's own. */
export function chatError(message: string, type: string): JsonObject {
  return { error: { message, type } };
}

/** The error `type` a status suggests when the backend's body says nothing usable. */
export function errorTypeFor(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "backend_error";
  return "invalid_request_error";
}
