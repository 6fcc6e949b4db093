/**
 * An event stream passed on untranslated, watched without being read: its bytes are scanned
 * for event boundaries (a blank line, found by the runtime's own byte search), the text of the
 * complete events is decoded at once, and only events the provider's filter says may change
 * the stream's progress (its end, an error, its usage) are parsed (core/llm/sse.ts). Most
 * events of a chat stream are content deltas nobody needs: splitting each into lines and
 * fields in JavaScript was most of what watching a stream cost. (Searching the bytes for the
 * filter's words in JavaScript cost more than that; the runtime's string search on the
 * decoded text costs little.)
 *
 * Streams with a CR anywhere (CRLF or CR line ends, which the scan does not follow) and events
 * larger than `MAX_PENDING` go through the parser whole from there on, as before.
 */
import type { StreamEvent } from "./events.ts";
import type { SseParser } from "./sse.ts";

/**
 * Whether complete events, as their raw text (`data:` lines and all), may change the stream's
 * progress. A false "yes" only costs their parse; a false "no" would lose the end or the usage.
 */
export type EventTextFilter = (text: string) => boolean;

const LF = 10;
const CR = 13;
/** An event still open past this many bytes: the rest of the stream is parsed whole (no copying it again per chunk). */
const MAX_PENDING = 64 * 1024;

/** The index just past the last blank line of `bytes` ("\n\n"), 0 when there is none. */
function lastBoundary(bytes: Uint8Array): number {
  let i = bytes.lastIndexOf(LF);
  while (i > 0) {
    if (bytes[i - 1] === LF) return i + 1;
    i = bytes.lastIndexOf(LF, i - 1);
  }
  return 0;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a, 0);
  out.set(b, a.byteLength);
  return out;
}

export class SseByteScan {
  /** The bytes after the last boundary seen: an event not complete yet. */
  private pending: Uint8Array | undefined;
  /** The parser takes everything from here on (a CR, or an event too large to hold). */
  private whole = false;
  private readonly decoder = new TextDecoder();

  constructor(
    private readonly parser: SseParser,
    private readonly mayMatter: EventTextFilter,
  ) {}

  /** A chunk of the backend's stream: the events it completed that may matter, parsed. */
  push(chunk: Uint8Array): StreamEvent[] {
    if (this.whole) return this.parser.push(this.decoder.decode(chunk, { stream: true }));
    const bytes = this.pending ? concat(this.pending, chunk) : chunk;
    this.pending = undefined;
    if (bytes.indexOf(CR) !== -1) return this.parseWhole(bytes);
    const end = lastBoundary(bytes);
    if (end < bytes.byteLength) {
      if (bytes.byteLength - end > MAX_PENDING) return this.parseWhole(bytes);
      // A copy: the chunk itself goes on to the client.
      this.pending = bytes.slice(end);
    }
    if (end === 0) return [];
    // The events end at a blank line, so the text never splits a character: decoded on its own.
    const text = this.decoder.decode(end === bytes.byteLength ? bytes : bytes.subarray(0, end));
    return this.mayMatter(text) ? this.parser.push(text) : [];
  }

  /** The stream ended: an event left open (some backends omit the last blank line), parsed when it may matter. */
  end(): StreamEvent[] {
    if (this.whole) return [...this.parser.push(this.decoder.decode()), ...this.parser.end()];
    const rest = this.pending;
    this.pending = undefined;
    const text = rest ? this.decoder.decode(rest) : "";
    const events = text !== "" && this.mayMatter(text) ? this.parser.push(text) : [];
    return [...events, ...this.parser.end()];
  }

  private parseWhole(bytes: Uint8Array): StreamEvent[] {
    this.whole = true;
    return this.parser.push(this.decoder.decode(bytes, { stream: true }));
  }
}
