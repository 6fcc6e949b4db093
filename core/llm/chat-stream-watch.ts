/**
 * Follows a chat-completions event stream passed on untranslated: its end (`[DONE]`, a choice
 * with a `finish_reason`, or an error event) and the usage of its final `include_usage` chunk.
 */
import type { StreamEvent } from "./events.ts";
import { isRecord } from "./json.ts";
import type { StreamProgress } from "./provider.ts";
import { usageOf } from "./usage.ts";
import { ascii, indexOfBytes } from "./sse-scan.ts";

/** A finish_reason with a string value, or an `error` or `usage` key, as raw JSON text. */
const MAY_MATTER = /"finish_reason"\s*:\s*"|"error"|"usage"/;

const DONE = ascii("[DONE]");
const ERROR = ascii('"error"');
const USAGE = ascii('"usage"');
const FINISH_REASON = ascii('"finish_reason"');

const isSpace = (byte: number) => byte === 32 || byte === 9 || byte === 10 || byte === 13;
const DATA_FIELD = ascii("data:");
const NULL = ascii("null");

const startsWith = (bytes: Uint8Array, at: number, word: Uint8Array, end: number) => at + word.byteLength <= end && word.every((b, i) => bytes[at + i] === b);

/** Past JSON white space, and a line break into the next `data:` line of a multi-line event. */
function skipGap(bytes: Uint8Array, from: number, end: number): number {
  let i = from;
  while (i < end) {
    if (bytes[i] === 10 && startsWith(bytes, i + 1, DATA_FIELD, end)) {
      i += 1 + DATA_FIELD.byteLength;
      if (bytes[i] === 32) i++;
    } else if (isSpace(bytes[i])) i++;
    else break;
  }
  return i;
}

/** A `"finish_reason"` key whose value may be a string: anything but the `null` of every content delta. */
function stringFinishReason(bytes: Uint8Array, start: number, end: number): boolean {
  for (let at = indexOfBytes(bytes, FINISH_REASON, start, end); at !== -1; at = indexOfBytes(bytes, FINISH_REASON, at + 1, end)) {
    let i = skipGap(bytes, at + FINISH_REASON.byteLength, end);
    if (bytes[i] !== 58 /* : */) continue;
    i = skipGap(bytes, i + 1, end);
    if (!startsWith(bytes, i, NULL, end)) return true;
  }
  return false;
}

export class ChatStreamWatch {
  /**
   * The byte filter of a passed stream (core/llm/sse-scan.ts): the events that may carry the
   * end (`[DONE]`, a string finish reason), an error or usage, as `MAY_MATTER` says of their text.
   */
  static mayMatter(bytes: Uint8Array, start: number, end: number): boolean {
    return indexOfBytes(bytes, USAGE, start, end) !== -1 || indexOfBytes(bytes, DONE, start, end) !== -1 ||
      indexOfBytes(bytes, ERROR, start, end) !== -1 || stringFinishReason(bytes, start, end);
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
