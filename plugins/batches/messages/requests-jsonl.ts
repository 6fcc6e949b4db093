/**
 * A Message Batches create body, `{"requests": [{...}, {...}]}`, as JSONL: each element of the
 * top-level `requests` array on a line of its own, streamed (a 200 MB body is never held; only
 * the bytes of the chunk being scanned). Whitespace between tokens, newlines included, becomes a
 * space so an element fits its line; strings pass untouched (JSON strings hold no raw newline).
 * Anything else at the top level is skipped. What is not JSON is found later, line by line, by
 * the batch's checks; `RequestsShape` tells the caller whether a `requests` array was there.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;
const RETURN = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;
const COMMA = 0x2c;

const OPEN = new Set([0x7b, 0x5b]); // { [
const CLOSE = new Set([0x7d, 0x5d]); // } ]

export interface RequestsShape {
  /** Whether a top-level `requests` array was found. */
  found: boolean;
}

export function requestsAsJsonl(body: ReadableStream<Uint8Array>, shape: RequestsShape): ReadableStream<Uint8Array> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  /** The text of the string being read at depth 1 (a top-level key candidate), or undefined. */
  let keyText: number[] | undefined;
  let lastKey = "";
  /** Inside the `requests` array (it opened at depth 1 -> 2). */
  let inRequests = false;
  /** Inside an element of it. */
  let inElement = false;
  const decoder = new TextDecoder();
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        // Every byte written replaces one read (a comma or a closing bracket becomes the newline).
        const out = new Uint8Array(chunk.byteLength);
        let length = 0;
        const put = (byte: number) => {
          out[length++] = byte;
        };
        for (const byte of chunk) {
          if (inString) {
            if (inElement) put(byte);
            if (keyText && !escaped && byte !== QUOTE) keyText.push(byte);
            if (escaped) escaped = false;
            else if (byte === BACKSLASH) escaped = true;
            else if (byte === QUOTE) {
              inString = false;
              if (keyText) {
                lastKey = decoder.decode(new Uint8Array(keyText));
                keyText = undefined;
              }
            }
            continue;
          }
          if (byte === QUOTE) {
            inString = true;
            if (depth === 1) keyText = [];
            if (inRequests && depth === 2 && !inElement) inElement = true;
            if (inElement) put(byte);
            continue;
          }
          if (OPEN.has(byte)) {
            if (depth === 1 && byte === 0x5b && lastKey === "requests") {
              inRequests = true;
              shape.found = true;
              depth++;
              continue;
            }
            if (inRequests && depth === 2 && !inElement) inElement = true;
            depth++;
            if (inElement) put(byte);
            continue;
          }
          if (CLOSE.has(byte)) {
            depth--;
            if (inRequests && depth === 1) {
              if (inElement) put(NEWLINE);
              inElement = false;
              inRequests = false;
              continue;
            }
            if (inElement) put(byte);
            continue;
          }
          if (inRequests && depth === 2) {
            if (byte === COMMA) {
              if (inElement) put(NEWLINE);
              inElement = false;
              continue;
            }
            if (byte === SPACE || byte === TAB || byte === NEWLINE || byte === RETURN) continue;
            inElement = true;
            put(byte);
            continue;
          }
          if (inElement) put(byte === NEWLINE || byte === RETURN ? SPACE : byte);
        }
        if (length > 0) controller.enqueue(out.slice(0, length));
      },
    }),
  );
}
