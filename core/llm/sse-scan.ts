/**
 * An event stream passed on untranslated, watched without being read: its bytes are scanned
 * for event boundaries (a blank line), and only the events the provider's byte filter says
 * may change the stream's progress (its end, an error, its usage) are decoded and parsed
 * (core/llm/sse.ts). Most events of a chat stream are content deltas nobody needs: decoding
 * and splitting each of them into lines was most of what watching a stream cost.
 *
 * Streams with a CR anywhere (CRLF or CR line ends, which the scan does not follow) and events
 * larger than `MAX_PENDING` go through the parser whole from there on, as before.
 */
import type { StreamEvent } from "./events.ts";
import type { SseParser } from "./sse.ts";

/**
 * Whether the complete events in `bytes[start, end)` may change the stream's progress. A false
 * "yes" only costs their parse; a false "no" would lose the end or the usage.
 */
export type EventBytesFilter = (bytes: Uint8Array, start: number, end: number) => boolean;

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
    private readonly mayMatter: EventBytesFilter,
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
    // The events end at a blank line, so the text never splits a character: decoded on its own.
    return end > 0 && this.mayMatter(bytes, 0, end) ? this.parser.push(this.decoder.decode(bytes.subarray(0, end))) : [];
  }

  /** The stream ended: an event left open (some backends omit the last blank line), parsed when it may matter. */
  end(): StreamEvent[] {
    if (this.whole) return [...this.parser.push(this.decoder.decode()), ...this.parser.end()];
    const rest = this.pending;
    this.pending = undefined;
    const events = rest && this.mayMatter(rest, 0, rest.byteLength) ? this.parser.push(this.decoder.decode(rest)) : [];
    return [...events, ...this.parser.end()];
  }

  private parseWhole(bytes: Uint8Array): StreamEvent[] {
    this.whole = true;
    return this.parser.push(this.decoder.decode(bytes, { stream: true }));
  }
}

/** The ASCII bytes of `text`. */
export const ascii = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));

/** The index of `needle` in `bytes[start, end)`, -1 when absent (anchored on its second byte, rarer than a quote). */
export function indexOfBytes(bytes: Uint8Array, needle: Uint8Array, start: number, end: number): number {
  const last = end - needle.byteLength;
  const anchor = needle[1];
  for (let i = bytes.indexOf(anchor, start + 1); i !== -1 && i - 1 <= last; i = bytes.indexOf(anchor, i + 1)) {
    let at = 0;
    const from = i - 1;
    while (at < needle.byteLength && bytes[from + at] === needle[at]) at++;
    if (at === needle.byteLength) return from;
  }
  return -1;
}
