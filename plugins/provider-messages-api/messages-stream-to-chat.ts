/**
 * Messages-style event stream -> chat-completions chunks, one translator per request so the
 * message id, token counts and tool-call indexes live on the instance.
 *
 * | Messages-style event                               | chat-completions chunk(s)                          |
 * |----------------------------------------------------|----------------------------------------------------|
 * | `message_start` {message:{id, model, usage}}       | delta {role:"assistant", content:""}              |
 * | `content_block_start` tool_use {id, name}          | delta tool_calls[{index, id, type, function:{name, arguments:""}}] |
 * | `content_block_delta` text_delta                   | delta {content}                                    |
 * | `content_block_delta` input_json_delta             | delta tool_calls[{index, function:{arguments: partial}}] |
 * | `message_delta` {delta:{stop_reason}, usage}       | empty delta with `finish_reason` (mapped as for responses) |
 * | `message_stop`                                     | the usage chunk (when `include_usage`), then `[DONE]` |
 * | `error` {error:{type, message}}                    | `{"error":{message, type}}`                        |
 * | `ping`, `content_block_stop`, thinking deltas, unknown events | nothing                                 |
 *
 * `progress()` says whether `message_stop` (or an `error` event) arrived and the usage so far
 * (`message_start` input tokens, `message_delta` output tokens); the gateway ends a stream
 * without it with an error event, so a client can tell a cut-off answer from a complete one.
 */
import {
  chatChunk,
  chatError,
  type ChunkEnvelope,
  DONE,
  isRecord,
  MessagesStreamWatch,
  messagesUsage,
  type OutEvent,
  type StreamEvent,
  type StreamProgress,
  type TranslatorContext,
  usageChunk,
} from "../../core/llm/provider.ts";
import { finishReasonOf } from "../../core/llm/messages.ts";
import { withCachedTokens } from "./messages-to-chat.ts";

export class MessagesStreamTranslator {
  private envelope: ChunkEnvelope;
  /** The usage counts seen so far: `message_start` has them all, `message_delta` updates some. */
  private readonly usage = new MessagesStreamWatch();
  /** Content block index -> tool_calls index (tool calls are numbered from 0 in the chat format). */
  private readonly toolIndex = new Map<number, number>();
  private done = false;

  constructor(
    context: TranslatorContext,
    private readonly includeUsage: () => boolean,
  ) {
    this.envelope = { id: `chatcmpl-${context.newId()}`, createdMs: context.now(), model: "" };
  }

  event(event: StreamEvent): OutEvent[] {
    const data = isRecord(event.json) ? event.json : undefined;
    if (!data) return [];
    switch (data.type ?? event.event) {
      case "message_start":
        return this.start(data);
      case "content_block_start":
        return this.blockStart(data);
      case "content_block_delta":
        return this.blockDelta(data);
      case "message_delta":
        return this.messageDelta(data);
      case "message_stop":
        return this.stop();
      case "error": {
        this.done = true;
        const error = isRecord(data.error) ? data.error : {};
        return [{ data: chatError(String(error.message ?? "the backend reported an error"), String(error.type ?? "backend_error")) }];
      }
      default:
        return [];
    }
  }

  progress(): StreamProgress {
    // The same sums as the usage chunk: cache reads and writes are prompt tokens.
    return { ended: this.done, usage: messagesUsage(this.usage.raw())?.usage };
  }

  private start(data: Record<string, unknown>): OutEvent[] {
    const message = isRecord(data.message) ? data.message : {};
    this.envelope = {
      ...this.envelope,
      id: typeof message.id === "string" ? message.id : this.envelope.id,
      model: typeof message.model === "string" ? message.model : "",
    };
    if (isRecord(message.usage)) this.usage.add(message.usage);
    return [chatChunk(this.envelope, { role: "assistant", content: "" })];
  }

  private blockStart(data: Record<string, unknown>): OutEvent[] {
    const block = isRecord(data.content_block) ? data.content_block : {};
    if (block.type === "tool_use") {
      const index = this.toolIndex.size;
      this.toolIndex.set(Number(data.index), index);
      return [
        chatChunk(this.envelope, {
          tool_calls: [{ index, id: String(block.id ?? ""), type: "function", function: { name: String(block.name ?? ""), arguments: "" } }],
        }),
      ];
    }
    if (block.type === "text" && typeof block.text === "string" && block.text !== "") {
      return [chatChunk(this.envelope, { content: block.text })];
    }
    return [];
  }

  private blockDelta(data: Record<string, unknown>): OutEvent[] {
    const delta = isRecord(data.delta) ? data.delta : {};
    if (delta.type === "text_delta" && typeof delta.text === "string") {
      return [chatChunk(this.envelope, { content: delta.text })];
    }
    if (delta.type === "input_json_delta" && typeof delta.partial_json === "string") {
      const index = this.toolIndex.get(Number(data.index));
      if (index === undefined) return [];
      return [chatChunk(this.envelope, { tool_calls: [{ index, function: { arguments: delta.partial_json } }] })];
    }
    return [];
  }

  private messageDelta(data: Record<string, unknown>): OutEvent[] {
    if (isRecord(data.usage)) this.usage.add(data.usage);
    const delta = isRecord(data.delta) ? data.delta : {};
    const reason = finishReasonOf(delta.stop_reason);
    return reason === null ? [] : [chatChunk(this.envelope, {}, reason)];
  }

  private stop(): OutEvent[] {
    this.done = true;
    const out: OutEvent[] = [];
    const counted = messagesUsage(this.usage.raw());
    if (this.includeUsage() && counted) {
      const chunk = usageChunk(this.envelope, counted.usage);
      if (isRecord(chunk.data) && isRecord(chunk.data.usage)) chunk.data.usage = withCachedTokens(chunk.data.usage, counted.cachedTokens);
      out.push(chunk);
    }
    out.push(DONE);
    return out;
  }
}
