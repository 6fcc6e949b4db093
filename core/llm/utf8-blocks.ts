/**
 * UTF-8 bytes of many small texts, a stream's events: each written into a shared block rather
 * than into a buffer of its own. `TextEncoder.encode` allocates an ArrayBuffer per text, and for
 * a 200-byte event that allocation and its collection cost several times the encoding
 * (bench/README.md, "Guardrails"). A text's bytes are a view of the block, which is only ever
 * appended to: a full block is left to whoever still holds views of it (the socket writing
 * them), and a new one is started, so a view can be queued or kept as long as needed.
 */

const BLOCK_BYTES = 16 * 1024;
/** A text that may need more than this is encoded on its own (as `TextEncoder.encode` does). */
const SHARED_MAX_BYTES = BLOCK_BYTES / 4;

const encoder = new TextEncoder();
let block = new Uint8Array(BLOCK_BYTES);
let used = 0;

/** `text` as UTF-8 (`TextEncoder.encode`'s bytes), small texts in a shared block. */
export function utf8(text: string): Uint8Array<ArrayBuffer> {
  // A UTF-16 code unit is at most 3 bytes of UTF-8.
  const most = text.length * 3;
  if (most > SHARED_MAX_BYTES) return encoder.encode(text);
  if (BLOCK_BYTES - used < most) {
    block = new Uint8Array(BLOCK_BYTES);
    used = 0;
  }
  const { written } = encoder.encodeInto(text, block.subarray(used));
  const bytes = block.subarray(used, used + written);
  used += written;
  return bytes;
}
