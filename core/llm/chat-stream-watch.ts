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

export class ChatStreamWatch {
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
