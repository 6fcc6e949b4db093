/**
 * `streamGenerateContent?alt=sse` -> chat-completions chunks, one translator per request so
 * the ids, the tool-call counts and the usage live on the instance.
 *
 * Each SSE event is a whole `GenerateContentResponse` (`data:` lines only, no event names, no
 * `[DONE]`): its candidates hold the new parts, the one that ends a candidate carries its
 * `finishReason`, and `usageMetadata` (in every event or only the last) holds the counts so far.
 *
 * | Gemini event                                      | chat-completions chunk(s)                          |
 * |---------------------------------------------------|----------------------------------------------------|
 * | a candidate's first event                         | delta {role:"assistant", content:""} (choice index = candidate index) |
 * | `text` part (not a thought)                       | delta {content}                                    |
 * | `functionCall` part                               | delta tool_calls[{index, id, type, function:{name, arguments}}] whole (+ `extra_content` with its thought signature) |
 * | `finishReason`                                    | empty delta with `finish_reason` (mapped as for responses) |
 * | `usageMetadata`                                   | remembered; the usage chunk at the end (when `include_usage`) |
 * | `promptFeedback.blockReason`, no candidates       | an error event, 400's body (see prompt-block.ts); the stream ends |
 * | `{"error":{...}}`                                 | an error event (see google-errors.ts); the stream ends |
 * | the backend's stream ends                         | the usage chunk (when asked for), then `[DONE]`    |
 *
 * `progress()` says the stream ended once every candidate it started has its finish reason (or
 * an error came); a stream cut before that ends with the gateway's error event instead.
 */
import {
  chatChunk,
  type ChunkEnvelope,
  DONE,
  type FinishReason,
  isRecord,
  type JsonObject,
  type OutEvent,
  type StreamEvent,
  type StreamProgress,
  type TranslatorContext,
  usageChunk,
} from "../../core/llm/provider.ts";
import { answerText, choiceFinish, partsOf, toolCallOf } from "./gemini-to-chat.ts";
import { chatUsage, type GeminiUsage, geminiUsage } from "./gemini-usage.ts";
import { googleErrorOf, googleToChatError } from "./google-errors.ts";
import { promptBlockedError, promptBlockOf } from "./prompt-block.ts";

export class GeminiStreamTranslator {
  private readonly envelope: ChunkEnvelope;
  private identified = false;
  /** Candidate indexes whose first chunk went out, and those whose finish reason did. */
  private readonly started = new Set<number>();
  private readonly finished = new Set<number>();
  /** Candidate index -> tool calls sent so far (tool calls are numbered from 0 per choice). */
  private readonly toolCalls = new Map<number, number>();
  private counted: GeminiUsage | undefined;
  private failed = false;

  constructor(
    private readonly context: TranslatorContext,
    private readonly includeUsage: () => boolean,
  ) {
    this.envelope = { id: `chatcmpl-${context.newId()}`, createdMs: context.now(), model: "" };
  }

  event(event: StreamEvent): OutEvent[] {
    const data = isRecord(event.json) ? event.json : undefined;
    if (!data || this.failed) return [];
    const error = googleErrorOf(data);
    if (error) {
      this.failed = true;
      return [{ data: googleToChatError(error.code ?? 500, data) }];
    }
    this.identify(data);
    this.counted = geminiUsage(data.usageMetadata) ?? this.counted;
    const block = promptBlockOf(data);
    if (block) {
      this.failed = true;
      return [{ data: promptBlockedError(block) }];
    }
    const candidates = Array.isArray(data.candidates) ? data.candidates : [];
    return candidates.flatMap((candidate, position) => this.candidate(candidate, position));
  }

  /** The stream ended as Gemini ends it (the connection closes): the usage chunk and `[DONE]`. */
  end(): OutEvent[] {
    if (this.failed) return [];
    const out: OutEvent[] = [];
    if (this.includeUsage() && this.counted) {
      const chunk = usageChunk(this.envelope, this.counted.usage);
      if (isRecord(chunk.data)) chunk.data.usage = chatUsage(this.counted);
      out.push(chunk);
    }
    out.push(DONE);
    return out;
  }

  progress(): StreamProgress {
    const allFinished = this.finished.size > 0 && [...this.started].every((index) => this.finished.has(index));
    return { ended: this.failed || allFinished, usage: this.counted?.usage };
  }

  private identify(data: JsonObject): void {
    if (this.identified) return;
    this.identified = true;
    if (typeof data.responseId === "string") this.envelope.id = data.responseId;
    if (typeof data.modelVersion === "string") this.envelope.model = data.modelVersion;
  }

  private candidate(candidate: unknown, position: number): OutEvent[] {
    const index = isRecord(candidate) && typeof candidate.index === "number" ? candidate.index : position;
    const out: OutEvent[] = [];
    if (!this.started.has(index)) {
      this.started.add(index);
      out.push(this.chunk(index, { role: "assistant", content: "" }));
    }
    for (const part of partsOf(candidate)) {
      const text = answerText(part);
      if (text !== undefined && text !== "") out.push(this.chunk(index, { content: text }));
      const call = toolCallOf(part, this.context.newId);
      if (call) {
        const number = this.toolCalls.get(index) ?? 0;
        this.toolCalls.set(index, number + 1);
        out.push(this.chunk(index, { tool_calls: [{ index: number, ...call }] }));
      }
    }
    const finish = choiceFinish(isRecord(candidate) ? candidate.finishReason : undefined, (this.toolCalls.get(index) ?? 0) > 0);
    if (finish !== null && !this.finished.has(index)) {
      this.finished.add(index);
      out.push(this.chunk(index, {}, finish));
    }
    return out;
  }

  /** A chunk for the choice of candidate `index`. */
  private chunk(index: number, delta: JsonObject, finish: FinishReason | null = null): OutEvent {
    const event = chatChunk(this.envelope, delta, finish);
    const choice = isRecord(event.data) && Array.isArray(event.data.choices) ? event.data.choices[0] : undefined;
    if (isRecord(choice)) choice.index = index;
    return event;
  }
}
