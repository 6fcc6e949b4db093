/**
 * The Response object a Responses client gets (`object: "response"`): the request's settings
 * echoed as the Responses API does, the output items, the status and the usage, read from a
 * chat-completions answer.
 *
 * | chat completions                                   | Responses                                         |
 * |----------------------------------------------------|---------------------------------------------------|
 * | `choices[0].message.content`                       | a `message` item with one `output_text` part      |
 * | `choices[0].message.tool_calls[]`                  | `function_call` items {call_id, name, arguments}  |
 * | `finish_reason` length / content_filter            | `status: "incomplete"`, `incomplete_details.reason` max_output_tokens / content_filter |
 * | `usage.prompt_tokens` / `completion_tokens`        | `usage.input_tokens` / `output_tokens`, `total_tokens` |
 * | `prompt_tokens_details.cached_tokens`              | `input_tokens_details.cached_tokens`              |
 * | `completion_tokens_details.reasoning_tokens`       | `output_tokens_details.reasoning_tokens`          |
 */
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import { newItemId } from "./items.ts";

/** What a Response says of the request that made it, fixed when the request is opened. */
export interface ResponseMeta {
  id: string;
  /** Seconds since the epoch. */
  createdAt: number;
  /** The model the client asked for. */
  model: string;
  previousResponseId: string | null;
  store: boolean;
  /** The request's settings, echoed as the Responses API does. */
  settings: JsonObject;
}

const orNull = (value: unknown) => (value === undefined ? null : value);

/** The settings a Response echoes, with the API's defaults where the request said nothing. */
export function echoedSettings(body: JsonObject): JsonObject {
  return {
    instructions: orNull(body.instructions),
    max_output_tokens: orNull(body.max_output_tokens),
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    temperature: body.temperature ?? 1,
    top_p: body.top_p ?? 1,
    tool_choice: body.tool_choice ?? "auto",
    tools: Array.isArray(body.tools) ? body.tools : [],
    text: isRecord(body.text) ? body.text : { format: { type: "text" } },
    reasoning: isRecord(body.reasoning) ? body.reasoning : { effort: null, summary: null },
    truncation: body.truncation ?? "disabled",
    user: orNull(body.user),
    metadata: isRecord(body.metadata) ? body.metadata : {},
  };
}

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

/** The Response envelope around `output`. */
export function responseObject(meta: ResponseMeta, status: ResponseStatus, output: JsonObject[], extra: JsonObject = {}): JsonObject {
  return {
    id: meta.id,
    object: "response",
    created_at: meta.createdAt,
    status,
    error: null,
    incomplete_details: null,
    model: meta.model,
    output,
    previous_response_id: meta.previousResponseId,
    store: meta.store,
    usage: null,
    ...meta.settings,
    ...extra,
  };
}

/** A chat `usage` as the Responses API counts it; undefined when it has none. */
export function responsesUsage(usage: unknown): JsonObject | undefined {
  if (!isRecord(usage) || typeof usage.prompt_tokens !== "number") return undefined;
  const input = usage.prompt_tokens;
  const output = typeof usage.completion_tokens === "number" ? usage.completion_tokens : 0;
  const cached = isRecord(usage.prompt_tokens_details) && typeof usage.prompt_tokens_details.cached_tokens === "number"
    ? usage.prompt_tokens_details.cached_tokens
    : 0;
  const reasoning = isRecord(usage.completion_tokens_details) && typeof usage.completion_tokens_details.reasoning_tokens === "number"
    ? usage.completion_tokens_details.reasoning_tokens
    : 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: cached },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: input + output,
  };
}

/** `status` and `incomplete_details` for a chat finish reason. */
export function statusOf(finishReason: unknown): { status: ResponseStatus; incomplete_details: JsonObject | null } {
  if (finishReason === "length") return { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
  if (finishReason === "content_filter") return { status: "incomplete", incomplete_details: { reason: "content_filter" } };
  return { status: "completed", incomplete_details: null };
}

export function messageItem(id: string, text: string, status: "in_progress" | "completed" | "incomplete"): JsonObject {
  return { type: "message", id, status, role: "assistant", content: status === "in_progress" ? [] : [{ type: "output_text", text, annotations: [] }] };
}

export function functionCallItem(id: string, callId: string, name: string, args: string, status: "in_progress" | "completed"): JsonObject {
  return { type: "function_call", id, call_id: callId, name, arguments: args, status };
}

/** A complete chat-completions answer as a Response. */
export function chatToResponse(body: unknown, meta: ResponseMeta, newId: () => string): JsonObject {
  if (!isRecord(body) || !Array.isArray(body.choices)) throw new Error("the backend answer is not a chat completion (no choices array)");
  const choice = isRecord(body.choices[0]) ? body.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const output: JsonObject[] = [];
  const { status, incomplete_details } = statusOf(choice.finish_reason);
  if (typeof message.content === "string" && message.content !== "") {
    output.push(messageItem(newItemId("msg", newId), message.content, status === "completed" ? "completed" : "incomplete"));
  }
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isRecord(call)) continue;
      const fn = isRecord(call.function) ? call.function : {};
      const args = typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? {});
      output.push(functionCallItem(newItemId("fc", newId), String(call.id ?? ""), String(fn.name ?? ""), args, "completed"));
    }
  }
  return responseObject(meta, status, output, { incomplete_details, usage: responsesUsage(body.usage) ?? null });
}

/** A chat error body (or any backend error body) in the OpenAI shape, `{"error":{"message","type","param","code"}}`. */
export function responsesError(status: number, body: unknown): JsonObject {
  const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  const message = typeof error?.message === "string"
    ? error.message
    : isRecord(body) && typeof body.message === "string"
    ? body.message
    : typeof body === "string" && body.trim() !== ""
    ? body.trim()
    : `the backend answered HTTP ${status}`;
  const type = typeof error?.type === "string" ? error.type : status >= 500 ? "server_error" : "invalid_request_error";
  return { error: { message, type, param: error?.param ?? null, code: error?.code ?? null } };
}
