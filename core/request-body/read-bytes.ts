/**
 * A request body read whole, never past a byte bound: the one way the gateway reads a body it
 * parses itself (sync and LLM JSON bodies, admin endpoints). Bytes are counted as they arrive,
 * so a missing or false `content-length` (a chunked body) cannot get a bigger body through,
 * and reading stops at the bound instead of holding the rest in memory.
 */
import { errors } from "../errors.ts";

const MIB = 1024 * 1024;

/** Admin endpoints (`/-/*`) that take a JSON body get this bound: their bodies are a few bytes. */
export const ADMIN_BODY_MAX_BYTES = MIB;

export interface BodyLimit {
  maxBytes: number;
  /** What the bound is, for the 413 message: `server.max_body_mb`, `the admin endpoints' limit`. */
  name: string;
  /** How to get under it, for the 413 message. */
  remedy: string;
}

export const ADMIN_BODY_LIMIT: BodyLimit = { maxBytes: ADMIN_BODY_MAX_BYTES, name: "the admin endpoints' body limit", remedy: "send a smaller body" };

export function tooLarge(limit: BodyLimit): Error {
  const mib = +(limit.maxBytes / MIB).toFixed(3);
  return errors.tooLarge(`the JSON body is larger than ${limit.name} (${mib} MiB = ${limit.maxBytes} bytes); ${limit.remedy}`);
}

/**
 * Reads and drops what is left of a refused body, at most `maxBytes`, then cancels it: a
 * client still sending then gets the error answer instead of a reset connection (most HTTP
 * clients, fetch included, do not read an answer while their upload is cut off). The
 * connection is closed after that answer all the same (adapters: `Connection: close` when a
 * body was not read to its end), so this is about the answer arriving, not about reuse.
 */
export async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, maxBytes: number): Promise<void> {
  let discarded = 0;
  try {
    while (discarded <= maxBytes) {
      const { done, value } = await reader.read();
      if (done) return;
      discarded += value.byteLength;
    }
  } catch {
    return; // the client went away: nothing left to drain
  }
  await reader.cancel().catch(() => undefined);
}

/** How much of an oversize JSON body is still read and dropped after its 413. */
const DISCARD_LIMIT = 16 * MIB;

/** The whole stream, refusing it as soon as it passes the bound. */
export async function readStreamCapped(stream: ReadableStream<Uint8Array>, limit: BodyLimit): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit.maxBytes) {
      void discardRest(reader, DISCARD_LIMIT);
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
  return concatBytes(chunks, total);
}

/** `chunks` in one buffer; `total` is the sum of their lengths. */
export function concatBytes(chunks: readonly Uint8Array[], total: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

/** The request's body (empty when it has none), or a 413 past `limit`. */
export async function readBodyBytes(request: Request, limit: BodyLimit): Promise<Uint8Array> {
  // An honest content-length over the bound is refused before reading anything.
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit.maxBytes) throw tooLarge(limit);
  // With a content-length the HTTP framing bounds the body (the server reads exactly that
  // many bytes), so it is read in one go: on Node that skips building a web stream for it,
  // the largest single cost of a small JSON request. Without one (chunked), it is counted.
  if (Number.isFinite(declared)) return new Uint8Array(await request.arrayBuffer());
  return request.body ? await readStreamCapped(request.body, limit) : new Uint8Array(0);
}
