/**
 * Local runtime `/api/chat` answers -> chat completions, so clients get one format.
 *
 * | `/api/chat`                                      | chat completions                                 |
 * |--------------------------------------------------|--------------------------------------------------|
 * | `message.content`                                | `choices[0].message.content`                     |
 * | `message.tool_calls[].function` {name, arguments object} | `tool_calls[]` {id (generated), type:"function", function:{name, arguments: JSON string}} |
 * | `done_reason` "length"                           | `finish_reason` "length"                         |
 * | tool calls present                               | `finish_reason` "tool_calls"                     |
 * | any other `done_reason`                          | `finish_reason` "stop"                           |
 * | `prompt_eval_count` / `eval_count`               | `usage.prompt_tokens` / `completion_tokens` (unknown when either is missing: the runtime leaves `prompt_eval_count` out when the prompt came from its cache) |
 * | `model`, `created_at`                            | `model`, `created`                               |
 * | error body `{"error": "..."}`                    | `{error:{message, type}}`                        |
 *
 * Streams are NDJSON, one such object per line with `done: false`, then a last line with
 * `done: true`, `done_reason` and the counts: each line becomes a chunk, the last one the
 * finish chunk, the usage chunk (when `include_usage`) and `[DONE]`.
 */
import {
  chatChunk,
  chatCompletion,
  chatError,
  type ChatToolCall,
  type ChunkEnvelope,
  DONE,
  errorTypeFor,
  type FinishReason,
  isRecord,
  type JsonObject,
  type OutEvent,
  type StreamEvent,
  type StreamProgress,
  type TokenUsage,
  type TranslatedResponse,
  type TranslatorContext,
  usageChunk,
  usageFromCounts,
} from "../../core/llm/provider.ts";

function toolCalls(message: JsonObject, context: TranslatorContext): ChatToolCall[] {
  if (!Array.isArray(message.tool_calls)) return [];
  return message.tool_calls.filter(isRecord).map((call) => {
    const fn = isRecord(call.function) ? call.function : {};
    const args = typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? {});
    return {
      id: typeof call.id === "string" ? call.id : `call_${context.newId()}`,
      type: "function",
      function: { name: String(fn.name ?? ""), arguments: args },
    };
  });
}

function finishReason(doneReason: unknown, hasToolCalls: boolean): FinishReason {
  if (hasToolCalls) return "tool_calls";
  return doneReason === "length" ? "length" : "stop";
}

function createdMs(createdAt: unknown, context: TranslatorContext): number {
  const parsed = typeof createdAt === "string" ? Date.parse(createdAt) : NaN;
  return Number.isNaN(parsed) ? context.now() : parsed;
}

export function localToChatResponse(body: unknown, context: TranslatorContext): TranslatedResponse {
  if (!isRecord(body) || !isRecord(body.message)) throw new Error("the backend answer is not an /api/chat response (no message)");
  const calls = toolCalls(body.message, context);
  const usage = usageFromCounts(body.prompt_eval_count, body.eval_count);
  return {
    body: chatCompletion({
      id: `chatcmpl-${context.newId()}`,
      createdMs: createdMs(body.created_at, context),
      model: body.model,
      message: {
        role: "assistant",
        content: typeof body.message.content === "string" ? body.message.content : "",
        ...(calls.length > 0 ? { tool_calls: calls } : {}),
      },
      finishReason: finishReason(body.done_reason, calls.length > 0),
      usage,
    }),
    usage,
  };
}

export function localToChatError(status: number, body: unknown): JsonObject {
  if (isRecord(body) && typeof body.error === "string") return chatError(body.error, errorTypeFor(status));
  const text = typeof body === "string" && body.trim() !== "" ? body.trim() : `the backend answered HTTP ${status}`;
  return chatError(text, errorTypeFor(status));
}

export class LocalStreamTranslator {
  private envelope: ChunkEnvelope | undefined;
  private toolCount = 0;
  private done = false;
  private usage: TokenUsage | undefined;

  constructor(
    private readonly context: TranslatorContext,
    private readonly includeUsage: () => boolean,
  ) {}

  event(event: StreamEvent): OutEvent[] {
    const line = isRecord(event.json) ? event.json : undefined;
    if (!line) return [];
    if (typeof line.error === "string") {
      this.done = true;
      return [{ data: chatError(line.error, "backend_error") }];
    }
    const out: OutEvent[] = [];
    let envelope = this.envelope;
    if (!envelope) {
      envelope = { id: `chatcmpl-${this.context.newId()}`, createdMs: createdMs(line.created_at, this.context), model: String(line.model ?? "") };
      this.envelope = envelope;
      out.push(chatChunk(envelope, { role: "assistant", content: "" }));
    }
    const message = isRecord(line.message) ? line.message : {};
    if (typeof message.content === "string" && message.content !== "") out.push(chatChunk(envelope, { content: message.content }));
    const calls = toolCalls(message, this.context);
    if (calls.length > 0) {
      out.push(chatChunk(envelope, { tool_calls: calls.map((call) => ({ index: this.toolCount++, ...call })) }));
    }
    if (line.done === true) {
      this.done = true;
      out.push(chatChunk(envelope, {}, finishReason(line.done_reason, this.toolCount > 0)));
      const usage = usageFromCounts(line.prompt_eval_count, line.eval_count);
      this.usage = usage;
      if (usage && this.includeUsage()) out.push(usageChunk(envelope, usage));
      out.push(DONE);
    }
    return out;
  }

  /** Whether the `done: true` line (or an error line) arrived, and its counts; the gateway ends a stream without it with an error event. */
  progress(): StreamProgress {
    return { ended: this.done, usage: this.usage };
  }
}
