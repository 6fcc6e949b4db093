/**
 * Follows a chat-completions event stream passed on untranslated: its end (`[DONE]`, a choice
 * with a `finish_reason`, or an error event) and the usage of its final `include_usage` chunk.
 */
import type { StreamEvent } from "./events.ts";
import { isRecord } from "./json.ts";
import type { StreamProgress } from "./provider.ts";
import { usageOf } from "./usage.ts";

/** A finish_reason with a string value, or an `error` or `usage` key, as raw JSON text. */
const MAY_MATTER = /"finish_reason"\s*:\s*"|"error"|"usage"/;

/**
 * `MAY_MATTER` on the raw text of events (core/llm/sse-scan.ts): the same words, `[DONE]`, and
 * a finish reason whose value is anything but `null` (a string, or something unexpected),
 * however spaced, even across `data:` lines. The lookahead refuses white space and `data:` so
 * that giving back part of the gap cannot make a `null` pass.
 */
const RAW_MAY_MATTER = /"usage"|"error"|\[DONE\]|"finish_reason"(?:\s|data:)*:(?:\s|data:)*(?!\s|data:|n)/;

export class ChatStreamWatch {
  /** The filter of a passed stream's raw event text (core/llm/sse-scan.ts): the events that may carry the end, an error or usage. */
  static mayMatter(text: string): boolean {
    return RAW_MAY_MATTER.test(text);
  }

  private readonly state: StreamProgress = { ended: false, usage: undefined };

  event(event: StreamEvent): void {
    if (event.data === "[DONE]") {
      this.state.ended = true;
      return;
    }
    // Only a chunk with an error, a finish reason or usage changes the progress: the others
    // (most of a stream) are not parsed. A false match only costs the parse.
    if (!MAY_MATTER.test(event.data)) return;
    const chunk = event.json;
    if (!isRecord(chunk)) return;
    if (isRecord(chunk.error)) this.state.ended = true;
    if (Array.isArray(chunk.choices) && chunk.choices.some((choice) => isRecord(choice) && typeof choice.finish_reason === "string")) this.state.ended = true;
    this.state.usage = usageOf(chunk) ?? this.state.usage;
  }

  progress(): StreamProgress {
    return this.state;
  }
}
