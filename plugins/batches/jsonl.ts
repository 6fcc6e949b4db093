/**
 * The lines of a JSONL stream, one at a time, never more than one line (up to `maxLineBytes`)
 * in memory: a longer line is reported as too long and its bytes are skipped, not kept. Line
 * numbers are 1-based and count every line of the file, blank ones included; "\r\n" ends a
 * line like "\n".
 */
export interface JsonlLine {
  number: number;
  /** The line's text; undefined when it was longer than the limit. */
  text?: string;
}

export async function* jsonlLines(stream: ReadableStream<Uint8Array>, maxLineBytes: number): AsyncGenerator<JsonlLine> {
  const decoder = new TextDecoder("utf-8", { fatal: false });
  const reader = stream.getReader();
  let parts: Uint8Array[] = [];
  let length = 0;
  let tooLong = false;
  let number = 0;
  const take = (): JsonlLine => {
    number++;
    if (tooLong) {
      parts = [];
      length = 0;
      tooLong = false;
      return { number };
    }
    const bytes = new Uint8Array(length);
    let at = 0;
    for (const part of parts) {
      bytes.set(part, at);
      at += part.byteLength;
    }
    parts = [];
    length = 0;
    const end = bytes.byteLength > 0 && bytes[bytes.byteLength - 1] === 13 ? bytes.byteLength - 1 : bytes.byteLength;
    return { number, text: decoder.decode(bytes.subarray(0, end)) };
  };
  const keep = (piece: Uint8Array) => {
    if (tooLong) return;
    if (length + piece.byteLength > maxLineBytes) {
      tooLong = true;
      parts = [];
      length = 0;
      return;
    }
    if (piece.byteLength > 0) parts.push(piece.slice());
    length += piece.byteLength;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      let start = 0;
      for (let newline = value.indexOf(10); newline >= 0; newline = value.indexOf(10, start)) {
        keep(value.subarray(start, newline));
        yield take();
        start = newline + 1;
      }
      keep(value.subarray(start));
    }
    if (length > 0 || tooLong) yield take();
  } finally {
    await reader.cancel().catch(() => {});
  }
}
