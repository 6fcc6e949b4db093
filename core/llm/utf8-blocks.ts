/**
 * UTF-8 bytes of many small texts, a stream's events and the request bodies the gateway writes
 * again (a masked or translated body): each written into a shared block rather than into a
 * buffer of its own. `TextEncoder.encode` allocates an ArrayBuffer per text, and for a 200-byte
 * event or a 2 KB body that allocation and its collection cost more than the encoding
 * (bench/README.md, "Guardrails"). A text's bytes are a view of the block, which is only ever
 * appended to: a full block is left to whoever still holds views of it (the socket writing
 * them), and a new one is started, so a view can be queued or kept as long as needed.
 */

const BLOCK_BYTES = 16 * 1024;
/**
 * A text of more UTF-16 code units than this is encoded on its own (as `TextEncoder.encode`
 * does). A code unit is 1 to 3 bytes of UTF-8, so a shared text takes at most 12 KB of a block.
 */
const SHARED_MAX_UNITS = 4 * 1024;

const encoder = new TextEncoder();
let block = new Uint8Array(BLOCK_BYTES);
let used = 0;

/** `text` as UTF-8 (`TextEncoder.encode`'s bytes), small texts in a shared block. */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  if (text.length > SHARED_MAX_UNITS) return encoder.encode(text);
  // At least a byte per code unit: a block with less room left cannot take it.
  if (BLOCK_BYTES - used < text.length) newBlock();
  let { read, written } = encoder.encodeInto(text, block.subarray(used));
  if (read < text.length) {
    // Characters of several bytes filled what was left: the text goes whole into a new block.
    newBlock();
    ({ written } = encoder.encodeInto(text, block));
  }
  const bytes = block.subarray(used, used + written);
  used += written;
  return bytes;
}

/**
 * `pieces` one after the other as UTF-8 (`utf8(pieces.join(""))`'s bytes) without joining them:
 * a masked body's long texts are pieces of their own, and a join would copy the whole body once
 * more before it is encoded.
 */
export function utf8Pieces(pieces: readonly string[]): Uint8Array<ArrayBuffer> {
  if (pieces.length === 1) return utf8(pieces[0]);
  let units = 0;
  for (const piece of pieces) units += piece.length;
  if (units > SHARED_MAX_UNITS) return encoder.encode(pieces.join(""));
  if (BLOCK_BYTES - used < units) newBlock();
  let end = writePieces(pieces, used);
  if (end === -1) {
    // Characters of several bytes filled what was left: the pieces go whole into a new block.
    newBlock();
    end = writePieces(pieces, 0);
  }
  const bytes = block.subarray(used, end);
  used = end;
  return bytes;
}

/** Writes `pieces` into the block from `from`: where they end, or -1 when they did not fit. */
function writePieces(pieces: readonly string[], from: number): number {
  let at = from;
  for (const piece of pieces) {
    const { read, written } = encoder.encodeInto(piece, block.subarray(at));
    if (read < piece.length) return -1;
    at += written;
  }
  return at;
}

function newBlock(): void {
  block = new Uint8Array(BLOCK_BYTES);
  used = 0;
}
