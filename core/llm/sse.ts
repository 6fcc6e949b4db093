/**
 * Server-sent events, parsed once (WHATWG HTML "event stream interpretation"), so no
 * translator ever re-parses `data: ` strings by hand.
 *
 * Handles what real streams do: events split across network chunks (even inside a CRLF),
 * CR / LF / CRLF line ends, multi-line `data`, `:` comments (keep-alives), a leading BOM.
 * One deliberate leniency: an event still open when the stream ends is delivered rather than
 * dropped, because some backends omit the final blank line.
 */
import type { OutEvent, StreamEvent } from "./events.ts";
import { parseJson } from "./json.ts";

/**
 * An event whose `json` is parsed on first read: a stream passed on untranslated is only
 * watched for its end and usage, which most events do not carry (chat-stream-watch.ts), and
 * parsing each of a stream's events was ~3 % of a streamed request's CPU.
 */
class ParsedEvent implements StreamEvent {
  event?: string;
  #json: unknown;
  #parsed = false;

  constructor(readonly data: string) {}

  get json(): unknown {
    if (!this.#parsed) {
      // A stream's end sentinel is not JSON, and a JSON.parse that throws costs 5-10 µs.
      this.#json = this.data === "[DONE]" ? undefined : parseJson(this.data);
      this.#parsed = true;
    }
    return this.#json;
  }
}

export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private eventName: string | undefined;
  private started = false;
  /** The previous chunk ended in CR: a LF at the start of the next one belongs to it. */
  private pendingCr = false;

  /** Feeds decoded text; returns the events it completed. */
  push(text: string): StreamEvent[] {
    if (text === "") return [];
    let chunk = text;
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    if (this.pendingCr && chunk.startsWith("\n")) chunk = chunk.slice(1);
    this.pendingCr = false;
    const buffer = this.buffer + chunk;
    const events: StreamEvent[] = [];
    let start = 0;
    // The next CR and LF, each found by `indexOf` (a loop over every character cost more than the events' parse).
    let cr = buffer.indexOf("\r");
    let lf = buffer.indexOf("\n");
    while (cr !== -1 || lf !== -1) {
      const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr;
      this.line(buffer.slice(start, end), events);
      start = end + 1;
      if (end === cr) {
        if (start === buffer.length) this.pendingCr = true;
        else if (buffer.charCodeAt(start) === 10) start++;
        cr = buffer.indexOf("\r", start);
      }
      if (lf !== -1 && lf < start) lf = buffer.indexOf("\n", start);
    }
    this.buffer = buffer.slice(start);
    return events;
  }

  /** The stream ended: the last line and any open event. */
  end(): StreamEvent[] {
    const events: StreamEvent[] = [];
    if (this.buffer !== "") this.line(this.buffer, events);
    this.buffer = "";
    this.dispatch(events);
    return events;
  }

  private line(line: string, events: StreamEvent[]): void {
    if (line === "") return this.dispatch(events);
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.eventName = value;
    // `id` and `retry` only matter to a reconnecting browser; the proxy never reconnects.
  }

  private dispatch(events: StreamEvent[]): void {
    if (this.data.length > 0) {
      const data = this.data.join("\n");
      const event: StreamEvent = new ParsedEvent(data);
      if (this.eventName !== undefined && this.eventName !== "") event.event = this.eventName;
      events.push(event);
    }
    this.data = [];
    this.eventName = undefined;
  }
}

/** One SSE event as text: each line of `data` gets its own `data:` field. */
export function formatSse(event: OutEvent): string {
  const head = event.event !== undefined ? `event: ${event.event}\n` : "";
  // JSON.stringify writes no line break (one in a string is escaped): one line.
  if (typeof event.data !== "string") return `${head}data: ${JSON.stringify(event.data)}\n\n`;
  if (event.data.indexOf("\n") === -1 && event.data.indexOf("\r") === -1) return `${head}data: ${event.data}\n\n`;
  return `${head}${event.data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`).join("\n")}\n\n`;
}
