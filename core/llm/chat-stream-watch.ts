/**
 * Follows a chat-completions event stream passed on untranslated: its end (`[DONE]`, a choice
 * with a `finish_reason`, or an error event) and the usage of its final `include_usage` chunk.
 */
import type { StreamEvent } from "./events.ts";
import { isRecord } from "./json.ts";
import type { StreamProgress } from "./provider.ts";
import { usageOf } from "./usage.ts";

export class ChatStreamWatch {
  private readonly state: StreamProgress = { ended: false, usage: undefined };

  event(event: StreamEvent): void {
    if (event.data === "[DONE]") {
      this.state.ended = true;
      return;
    }
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
