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
 * How much of an oversize body is still read (and dropped) after the 413, so the client can
 * finish sending and keep using its connection. Stopping mid-body instead leaves unread
 * bytes on the socket: the server then drops the connection and the client's next request
 * on it fails. Past this much the connection is given up.
 */
const DISCARD_LIMIT = 16 * MIB;

async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  let discarded = 0;
  try {
    while (discarded <= DISCARD_LIMIT) {
      const { done, value } = await reader.read();
      if (done) return;
      discarded += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // The client went away: nothing left to drain.
  }
}

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
      void discardRest(reader);
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0];
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
