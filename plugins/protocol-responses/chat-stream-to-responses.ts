/**
 * A chat-completions event stream -> the Responses event stream (each event named by its
 * `type`, every one with `sequence_number` counting from 0), ending with the whole Response.
 *
 * | chat completions                                  | Responses                                                |
 * |---------------------------------------------------|----------------------------------------------------------|
 * | the first chunk                                   | `response.created`, `response.in_progress`               |
 * | delta `content`                                   | `response.output_item.added` (message) and `response.content_part.added` once, `response.output_text.delta` |
 * | delta `tool_calls[{index, id, function:{name}}]`  | the open item done, `response.output_item.added` (function_call) |
 * | delta `tool_calls[{index, function:{arguments}}]` | `response.function_call_arguments.delta`                 |
 * | `finish_reason`, the usage chunk                  | remembered for the end                                   |
 * | `[DONE]` (or the stream's end)                    | the open item done (`response.output_text.done`, `response.content_part.done` / `response.function_call_arguments.done`, `response.output_item.done`), `response.completed` or `response.incomplete` |
 * | `{"error":{message, type}}`, or a stream cut      | `error`, then `response.failed`                          |
 */
import type { OutEvent } from "../../core/llm/events.ts";
import { isRecord, type JsonObject } from "../../core/llm/json.ts";
import { newItemId } from "./items.ts";
import { functionCallItem, messageItem, type ResponseMeta, responseObject, responsesUsage, statusOf } from "./response.ts";

interface OpenItem {
  index: number;
  item: JsonObject;
  /** The chat tool index a function call holds; undefined for the message. */
  tool?: number;
  text: string;
}

export class ChatStreamToResponses {
  private sequence = 0;
  private started = false;
  private finished = false;
  private open: OpenItem | undefined;
  private readonly output: JsonObject[] = [];
  private finishReason: unknown;
  private usage: JsonObject | undefined;

  constructor(
    private readonly meta: ResponseMeta,
    private readonly newId: () => string,
    /** Told the final Response once the stream completed (or stopped on a limit). */
    private readonly onDone: (response: JsonObject) => void,
  ) {}

  /** Whether the stream has sent anything: the broken-off end continues its sequence. */
  get began(): boolean {
    return this.started;
  }

  /** One chat event (a parsed chunk, or "[DONE]") -> Responses events. */
  event(data: unknown): OutEvent[] {
    if (this.finished) return [];
    if (data === "[DONE]") return this.finish();
    if (!isRecord(data)) return [];
    if (isRecord(data.error)) return this.fail(typeof data.error.message === "string" ? data.error.message : "the backend stream failed");
    const out = this.start();
    this.usage = responsesUsage(data.usage) ?? this.usage;
    const choice = Array.isArray(data.choices) && isRecord(data.choices[0]) ? data.choices[0] : undefined;
    if (!choice) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    if (typeof delta.content === "string" && delta.content !== "") out.push(...this.text(delta.content));
    if (Array.isArray(delta.tool_calls)) { for (const call of delta.tool_calls) if (isRecord(call)) out.push(...this.toolCall(call)); }
    if (typeof choice.finish_reason === "string") this.finishReason = choice.finish_reason;
    return out;
  }

  /** The backend stream ended as its protocol says: what is still owed (a stream without `[DONE]`). */
  end(): OutEvent[] {
    return this.finished ? [] : this.finish();
  }

  /** The end of a stream that broke off: `error`, then `response.failed` with what arrived. */
  fail(message: string): OutEvent[] {
    // A stream that already ended (a backend error event, then the cut) says so once.
    if (this.finished) return [];
    const out = this.start();
    this.finished = true;
    const error = { code: "server_error", message };
    out.push(this.named({ type: "error", code: "server_error", message, param: null }));
    out.push(this.named({ type: "response.failed", response: responseObject(this.meta, "failed", this.output, { error }) }));
    return out;
  }

  private named(data: JsonObject): OutEvent {
    return { event: String(data.type), data: { ...data, sequence_number: this.sequence++ } };
  }

  private start(): OutEvent[] {
    if (this.started) return [];
    this.started = true;
    const response = responseObject(this.meta, "in_progress", []);
    return [this.named({ type: "response.created", response }), this.named({ type: "response.in_progress", response })];
  }

  private text(delta: string): OutEvent[] {
    const out: OutEvent[] = [];
    if (!this.open || this.open.tool !== undefined) {
      out.push(...this.openItem(messageItem(newItemId("msg", this.newId), "", "in_progress")));
      out.push(
        this.named({ type: "response.content_part.added", item_id: this.open!.item.id, output_index: this.open!.index, content_index: 0, part: this.part("") }),
      );
    }
    const open = this.open!;
    open.text += delta;
    out.push(this.named({ type: "response.output_text.delta", item_id: open.item.id, output_index: open.index, content_index: 0, delta, logprobs: [] }));
    return out;
  }

  private toolCall(call: JsonObject): OutEvent[] {
    const out: OutEvent[] = [];
    const tool = typeof call.index === "number" ? call.index : 0;
    const fn = isRecord(call.function) ? call.function : {};
    if (this.open?.tool !== tool) {
      out.push(...this.openItem(functionCallItem(newItemId("fc", this.newId), String(call.id ?? ""), String(fn.name ?? ""), "", "in_progress"), tool));
    }
    const open = this.open!;
    if (typeof fn.arguments === "string" && fn.arguments !== "") {
      open.text += fn.arguments;
      out.push(this.named({ type: "response.function_call_arguments.delta", item_id: open.item.id, output_index: open.index, delta: fn.arguments }));
    }
    return out;
  }

  private part(text: string): JsonObject {
    return { type: "output_text", text, annotations: [] };
  }

  private openItem(item: JsonObject, tool?: number): OutEvent[] {
    const out = this.closeItem();
    this.open = { index: this.output.length, item, tool, text: "" };
    this.output.push(item);
    out.push(this.named({ type: "response.output_item.added", output_index: this.open.index, item }));
    return out;
  }

  private closeItem(): OutEvent[] {
    const open = this.open;
    if (!open) return [];
    this.open = undefined;
    const { index, item, text } = open;
    const out: OutEvent[] = [];
    let done: JsonObject;
    if (open.tool === undefined) {
      out.push(this.named({ type: "response.output_text.done", item_id: item.id, output_index: index, content_index: 0, text, logprobs: [] }));
      out.push(this.named({ type: "response.content_part.done", item_id: item.id, output_index: index, content_index: 0, part: this.part(text) }));
      done = messageItem(String(item.id), text, statusOf(this.finishReason).status === "completed" ? "completed" : "incomplete");
    } else {
      out.push(this.named({ type: "response.function_call_arguments.done", item_id: item.id, output_index: index, name: item.name, arguments: text }));
      done = functionCallItem(String(item.id), String(item.call_id), String(item.name), text, "completed");
    }
    this.output[index] = done;
    out.push(this.named({ type: "response.output_item.done", output_index: index, item: done }));
    return out;
  }

  private finish(): OutEvent[] {
    const out = this.start();
    this.finished = true;
    out.push(...this.closeItem());
    const { status, incomplete_details } = statusOf(this.finishReason);
    const response = responseObject(this.meta, status, this.output, { incomplete_details, usage: this.usage ?? null });
    this.onDone(response);
    out.push(this.named({ type: status === "completed" ? "response.completed" : "response.incomplete", response }));
    return out;
  }
}
