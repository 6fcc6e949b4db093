/**
 * ConverseStream events (decoded by event-stream.ts) -> chat-completions chunks, one
 * translator per request so the tool-call indexes and usage live on the instance.
 *
 * | ConverseStream event                                       | chat-completions chunk(s)                          |
 * |------------------------------------------------------------|----------------------------------------------------|
 * | `messageStart` {role}                                      | delta {role:"assistant", content:""}              |
 * | `contentBlockStart` {start:{toolUse:{toolUseId, name}}, contentBlockIndex} | delta tool_calls[{index, id, type, function:{name, arguments:""}}] |
 * | `contentBlockDelta` {delta:{text}}                         | delta {content}                                    |
 * | `contentBlockDelta` {delta:{toolUse:{input}}}              | delta tool_calls[{index, function:{arguments: partial}}] |
 * | `messageStop` {stopReason}                                 | empty delta with `finish_reason` (mapped as for responses) |
 * | `metadata` {usage}                                         | the usage chunk (when `include_usage`), then `[DONE]` |
 * | an exception frame (`error`: throttlingException, ...)     | `{"error":{message, type, code}}`                  |
 * | `contentBlockStop`, reasoning deltas, unknown events       | nothing                                            |
 *
 * `metadata` follows `messageStop` and carries the usage; a stream that ends after
 * `messageStop` without it still ends cleanly (`[DONE]` from `end()`), without usage.
 * `progress()` says whether `messageStop` (or an exception) arrived.
 */
import {
  chatChunk,
  type ChunkEnvelope,
  DONE,
  isRecord,
  type JsonObject,
  type OutEvent,
  type StreamEvent,
  type StreamProgress,
  type TranslatorContext,
  usageChunk,
} from "../../core/llm/provider.ts";
import { chatErrorFor } from "./converse-errors.ts";
import { converseUsage, finishReason, withCachedTokens } from "./converse-to-chat.ts";

/** `throttlingException` (the stream's member name) -> `ThrottlingException` (the error's name). */
const exceptionName = (type: string) => (type === "" ? "" : type[0].toUpperCase() + type.slice(1));

/** The HTTP status each stream exception has when Bedrock answers it before the stream. */
const EXCEPTION_STATUS: Record<string, number> = {
  ThrottlingException: 429,
  ValidationException: 400,
  ServiceUnavailableException: 503,
  InternalServerException: 500,
  ModelStreamErrorException: 424,
};

export class ConverseStreamTranslator {
  private envelope: ChunkEnvelope;
  /** Content block index -> tool_calls index (tool calls are numbered from 0 in the chat format). */
  private readonly toolIndex = new Map<number, number>();
  private usage: unknown;
  private stopped = false;
  private doneSent = false;

  constructor(
    context: TranslatorContext,
    private readonly model: () => string,
    private readonly includeUsage: () => boolean,
  ) {
    this.envelope = { id: `chatcmpl-${context.newId()}`, createdMs: context.now(), model: "" };
  }

  event(event: StreamEvent): OutEvent[] {
    const data = isRecord(event.json) ? event.json : undefined;
    if (!data || this.doneSent) return [];
    // Converse events name no model: the chunks carry the one the request went to.
    if (this.envelope.model === "") this.envelope = { ...this.envelope, model: this.model() };
    switch (event.event) {
      case "messageStart":
        return [chatChunk(this.envelope, { role: "assistant", content: "" })];
      case "contentBlockStart":
        return this.blockStart(data);
      case "contentBlockDelta":
        return this.blockDelta(data);
      case "messageStop":
        return this.messageStop(data);
      case "metadata":
        // The last event of a stream: its end even if `messageStop` went missing.
        this.stopped = true;
        this.usage = data.usage;
        return this.finish();
      case "error":
        return this.error(data);
      default:
        return [];
    }
  }

  /** The body ended as the protocol says: `[DONE]` when `metadata` did not already send it. */
  end(): OutEvent[] {
    return this.stopped && !this.doneSent ? this.finish() : [];
  }

  progress(): StreamProgress {
    return { ended: this.stopped, usage: converseUsage(this.usage)?.usage };
  }

  private blockStart(data: JsonObject): OutEvent[] {
    const start = isRecord(data.start) ? data.start : {};
    if (!isRecord(start.toolUse)) return [];
    const index = this.toolIndex.size;
    this.toolIndex.set(Number(data.contentBlockIndex), index);
    const toolUse = start.toolUse;
    return [
      chatChunk(this.envelope, {
        tool_calls: [{ index, id: String(toolUse.toolUseId ?? ""), type: "function", function: { name: String(toolUse.name ?? ""), arguments: "" } }],
      }),
    ];
  }

  private blockDelta(data: JsonObject): OutEvent[] {
    const delta = isRecord(data.delta) ? data.delta : {};
    if (typeof delta.text === "string") return delta.text === "" ? [] : [chatChunk(this.envelope, { content: delta.text })];
    if (isRecord(delta.toolUse) && typeof delta.toolUse.input === "string") {
      const index = this.toolIndex.get(Number(data.contentBlockIndex));
      if (index === undefined) return [];
      return [chatChunk(this.envelope, { tool_calls: [{ index, function: { arguments: delta.toolUse.input } }] })];
    }
    return [];
  }

  private messageStop(data: JsonObject): OutEvent[] {
    this.stopped = true;
    const reason = finishReason(data.stopReason);
    return [chatChunk(this.envelope, {}, reason ?? "stop")];
  }

  private finish(): OutEvent[] {
    this.doneSent = true;
    const out: OutEvent[] = [];
    const counted = converseUsage(this.usage);
    if (this.includeUsage() && counted) {
      const chunk = usageChunk(this.envelope, counted.usage);
      if (isRecord(chunk.data)) chunk.data.usage = withCachedTokens(chunk.data.usage, counted);
      out.push(chunk);
    }
    out.push(DONE);
    return out;
  }

  private error(data: JsonObject): OutEvent[] {
    // The stream is over: nothing after an exception frame belongs to the answer.
    this.stopped = true;
    this.doneSent = true;
    const name = exceptionName(typeof data.type === "string" ? data.type : "");
    const message = typeof data.message === "string" && data.message !== "" ? data.message : "the backend reported an error in the stream";
    return [{ data: chatErrorFor(EXCEPTION_STATUS[name] ?? 500, name, message) }];
  }
}
