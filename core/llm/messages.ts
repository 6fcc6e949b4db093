/**
 * The Messages API's shapes that both sides of the gateway need, written once: its paths, its
 * usage counts read as the chat-completions format counts them, its stop reasons against the
 * chat finish reasons, a tool call in either format, its error body, and a watch over a
 * Messages event stream passed on as it is (its end and its usage). The `messages_api` provider
 * (plugins/provider-messages-api) translates chat completions to a Messages backend with them;
 * the Messages client protocol (plugins/protocol-messages) translates Messages clients to chat
 * completions, and follows the answers of a backend that speaks Messages itself.
 */
import type { ErrorCode } from "../errors.ts";
import type { ChatToolCall, FinishReason } from "./chat.ts";
import type { OutEvent, StreamEvent } from "./events.ts";
import { isRecord, type JsonObject } from "./json.ts";
import { type TokenUsage, usageFromCounts } from "./usage.ts";

/** The Messages API's paths: where a Messages backend takes requests, and the routes a service lists for Messages clients. */
export const MESSAGES_PATH = "/v1/messages";
export const COUNT_TOKENS_PATH = "/v1/messages/count_tokens";

export type MessagesRoute = "messages" | "count_tokens";

/** Which inbound Messages route `path` is, if it is one (the LLM proxy, its error shape, the OpenAPI document). */
export function messagesRoute(path: string): MessagesRoute | undefined {
  if (path === MESSAGES_PATH) return "messages";
  if (path === COUNT_TOKENS_PATH) return "count_tokens";
  return undefined;
}

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0;

/** A Messages `usage`, as the chat-completions format reports it. */
export interface MessagesUsage {
  usage: TokenUsage;
  /** `cache_read_input_tokens`; undefined when the backend reported neither cache count. */
  cachedTokens: number | undefined;
}

/**
 * `input_tokens` there counts only the prompt after the last cache marker; the chat format's
 * `prompt_tokens` is the whole prompt (cached tokens included, as OpenAI-style APIs count it),
 * so the cache reads and writes are added back. Undefined when input or output is unknown.
 */
export function messagesUsage(raw: unknown): MessagesUsage | undefined {
  if (!isRecord(raw)) return undefined;
  const read = isCount(raw.cache_read_input_tokens) ? raw.cache_read_input_tokens : undefined;
  const written = isCount(raw.cache_creation_input_tokens) ? raw.cache_creation_input_tokens : undefined;
  const input = isCount(raw.input_tokens) ? raw.input_tokens + (read ?? 0) + (written ?? 0) : undefined;
  const counts = usageFromCounts(input, raw.output_tokens);
  if (!counts) return undefined;
  // Kept apart as well, so cache reads and writes can be priced at their own rates.
  const usage: TokenUsage = {
    ...counts,
    ...(read !== undefined ? { cached_tokens: read } : {}),
    ...(written !== undefined ? { cache_creation_tokens: written } : {}),
  };
  return { usage, cachedTokens: read !== undefined || written !== undefined ? (read ?? 0) : undefined };
}

/** The stop reasons that have a finish reason of their own; any other is the model stopping on its own (`end_turn` <-> `stop`). */
const STOP_AND_FINISH: ReadonlyArray<readonly [stop: string, finish: FinishReason]> = [
  ["max_tokens", "length"],
  ["tool_use", "tool_calls"],
  ["refusal", "content_filter"],
];
const FINISH_BY_STOP = new Map<unknown, FinishReason>(STOP_AND_FINISH);
// `function_call` is the chat format's older name for a tool call.
const STOP_BY_FINISH = new Map<unknown, string>([...STOP_AND_FINISH.map(([stop, finish]) => [finish, stop] as const), ["function_call", "tool_use"]]);

/** A Messages `stop_reason` as a chat `finish_reason` (end_turn, stop_sequence, pause_turn and anything newer: `stop`); null stays null. */
export function finishReasonOf(stopReason: unknown): FinishReason | null {
  if (stopReason === null || stopReason === undefined) return null;
  return FINISH_BY_STOP.get(stopReason) ?? "stop";
}

/** A chat `finish_reason` as a Messages `stop_reason` (`stop` and anything unknown: `end_turn`); null stays null. */
export function stopReasonOf(finishReason: unknown): string | null {
  if (finishReason === null || finishReason === undefined) return null;
  return STOP_BY_FINISH.get(finishReason) ?? "end_turn";
}

/** A Messages `tool_use` block {id, name, input} as a chat tool call (its input as a JSON string). */
export function toolCallOf(block: JsonObject): ChatToolCall {
  return {
    id: String(block.id ?? ""),
    type: "function",
    function: { name: String(block.name ?? ""), arguments: JSON.stringify(block.input ?? {}) },
  };
}

/** The error types the Messages API names; its clients map the status, these only label it. */
const MESSAGES_ERROR_TYPES = new Set([
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "request_too_large",
  "rate_limit_error",
  "api_error",
  "overloaded_error",
  "timeout_error",
]);

/** A Messages error type for `type` (kept when the Messages API knows it), else one the status suggests. */
export function messagesErrorType(status: number, type: unknown): string {
  if (typeof type === "string" && MESSAGES_ERROR_TYPES.has(type)) return type;
  if (status === 400) return "invalid_request_error";
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 529 || status === 503) return "overloaded_error";
  if (status === 504) return "timeout_error";
  return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
}

/** The Messages error body: `{"type":"error","error":{"type","message"}}`, with the gateway's `code` when it has one. */
export function messagesError(type: string, message: string, code?: string): JsonObject {
  return { type: "error", error: code === undefined ? { type, message } : { type, message, code } };
}

/** The gateway's own event ending a Messages stream it cannot finish (`event: error`, which its clients raise as an API error). */
export function messagesErrorEvent(message: string, type = "api_error"): OutEvent {
  return { event: "error", data: messagesError(type, message, "stream_interrupted" satisfies ErrorCode) };
}

/** The usage of a non-streaming Messages answer (`usage` at the top), as chat counts it. */
export function messagesAnswerUsage(body: unknown): TokenUsage | undefined {
  return isRecord(body) ? messagesUsage(body.usage)?.usage : undefined;
}

/**
 * Follows a Messages event stream passed on as it is: ended at `message_stop` (or an `error`
 * event); usage from `message_start` (all counts) and `message_delta` (later counts replace
 * earlier ones; a count an event leaves out or sends as null is kept).
 */
export class MessagesStreamWatch {
  private readonly counts: Record<string, unknown> = {};
  private ended = false;

  event(event: StreamEvent): void {
    const data = isRecord(event.json) ? event.json : undefined;
    if (!data) return;
    const type = data.type ?? event.event;
    if (type === "message_stop" || type === "error") this.ended = true;
    const usage = type === "message_start" && isRecord(data.message) ? data.message.usage : type === "message_delta" ? data.usage : undefined;
    if (isRecord(usage)) this.add(usage);
  }

  add(usage: Record<string, unknown>): void {
    for (const [name, value] of Object.entries(usage)) if (typeof value === "number") this.counts[name] = value;
  }

  /** The counts as the stream reported them (Messages names). */
  raw(): Record<string, unknown> {
    return this.counts;
  }

  progress(): { ended: boolean; usage: TokenUsage | undefined } {
    return { ended: this.ended, usage: messagesUsage(this.counts)?.usage };
  }
}
