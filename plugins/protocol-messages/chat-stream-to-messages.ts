/**
 * A chat-completions event stream -> the Messages event stream a Messages client
 * expects (each event named by its `type`, as the Messages API sends them).
 *
 * | chat completions                                 | Messages                                          |
 * |--------------------------------------------------|---------------------------------------------------|
 * | the first chunk                                  | `message_start` {message:{id, model, content:[], usage}} |
 * | delta `content`                                  | `content_block_start` text (once), `content_block_delta` text_delta |
 * | delta `tool_calls[{index, id, function:{name}}]` | `content_block_stop` of the open block, `content_block_start` tool_use |
 * | delta `tool_calls[{index, function:{arguments}}]`| `content_block_delta` input_json_delta            |
 * | `finish_reason`, the usage chunk                 | remembered for `message_delta`                     |
 * | `[DONE]` (or the stream's end after a `finish_reason`) | `content_block_stop`, `message_delta` {stop_reason, usage}, `message_stop` |
 * | `{"error":{message, type}}`                      | `error` {type:"error", error:{type, message}}      |
 */
import type { OutEvent } from "../../core/llm/events.ts";
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import { messagesErrorType, stopReasonOf } from "../../core/llm/messages.ts";
import { chatToMessagesError, messagesUsageOf } from "./chat-to-messages-answer.ts";

const named = (data: JsonObject): OutEvent => ({ event: String(data.type), data });

export class ChatStreamToMessages {
  private started = false;
  private finished = false;
  /** The open content block: its index and, for a tool call, the chat tool index it holds. */
  private open: { index: number; tool?: number } | undefined;
  private blocks = 0;
  private stop: string | null = null;
  private usage: JsonObject | undefined;

  constructor(private readonly messageId: () => string) {}

  /** One chat event (parsed chunk, or "[DONE]") -> Messages events. */
  event(data: unknown): OutEvent[] {
    if (this.finished) return [];
    if (data === "[DONE]") return this.finish();
    if (!isRecord(data)) return [];
    if (isRecord(data.error)) {
      this.finished = true;
      const error = chatToMessagesError(500, data);
      const inner = isRecord(error.error) ? error.error : {};
      return [{ event: "error", data: { ...error, error: { ...inner, type: messagesErrorType(500, inner.type) } } }];
    }
    const out: OutEvent[] = [];
    if (!this.started) out.push(this.start(data));
    this.usage = messagesUsageOf(data.usage) ?? this.usage;
    const choice = Array.isArray(data.choices) && isRecord(data.choices[0]) ? data.choices[0] : undefined;
    if (!choice) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    if (typeof delta.content === "string" && delta.content !== "") {
      if (!this.open || this.open.tool !== undefined) out.push(...this.openBlock({ type: "text", text: "" }));
      out.push(this.delta({ type: "text_delta", text: delta.content }));
    }
    if (Array.isArray(delta.tool_calls)) { for (const call of delta.tool_calls) if (isRecord(call)) out.push(...this.toolCall(call)); }
    if (typeof choice.finish_reason === "string") this.stop = stopReasonOf(choice.finish_reason);
    return out;
  }

  /** The backend stream ended as its protocol says: what is still owed (a stream without `[DONE]`). */
  end(): OutEvent[] {
    return this.finished || !this.started ? [] : this.finish();
  }

  private start(chunk: JsonObject): OutEvent {
    this.started = true;
    const id = typeof chunk.id === "string" && chunk.id !== "" ? chunk.id : this.messageId();
    const model = typeof chunk.model === "string" ? chunk.model : "";
    // A chat stream reports its usage at the end: the counts come with `message_delta`.
    const message = {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    return named({ type: "message_start", message });
  }

  private toolCall(call: JsonObject): OutEvent[] {
    const out: OutEvent[] = [];
    const index = typeof call.index === "number" ? call.index : 0;
    const fn = isRecord(call.function) ? call.function : {};
    if (this.open?.tool !== index) {
      out.push(...this.openBlock({ type: "tool_use", id: String(call.id ?? ""), name: String(fn.name ?? ""), input: {} }, index));
    }
    if (typeof fn.arguments === "string" && fn.arguments !== "") out.push(this.delta({ type: "input_json_delta", partial_json: fn.arguments }));
    return out;
  }

  private openBlock(block: JsonObject, tool?: number): OutEvent[] {
    const out = this.closeBlock();
    this.open = { index: this.blocks++, tool };
    out.push(named({ type: "content_block_start", index: this.open.index, content_block: block }));
    return out;
  }

  private closeBlock(): OutEvent[] {
    if (!this.open) return [];
    const index = this.open.index;
    this.open = undefined;
    return [named({ type: "content_block_stop", index })];
  }

  private delta(delta: JsonObject): OutEvent {
    return named({ type: "content_block_delta", index: this.open?.index ?? 0, delta });
  }

  private finish(): OutEvent[] {
    this.finished = true;
    // A stream with nothing before its end still opens its message.
    const out = this.started ? this.closeBlock() : [this.start({})];
    const usage = this.usage ?? { output_tokens: 0 };
    out.push(named({ type: "message_delta", delta: { stop_reason: this.stop ?? "end_turn", stop_sequence: null }, usage }));
    out.push(named({ type: "message_stop" }));
    return out;
  }
}
