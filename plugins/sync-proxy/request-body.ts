/**
 * Reads the sync request body the way the route needs it (spec 4.5, 7): a JSON body is
 * read whole because `model` is in it, capped at `server.max_body_mb`; any other body is
 * left as an unread stream so a large multipart upload goes to the backend as it arrives.
 */
import { errors } from "../../core/errors.ts";
import type { SyncBody } from "../../core/proxy/modes.ts";
import { findJsonSyntaxError } from "./json-syntax.ts";

const MIB = 1024 * 1024;

/** `server.max_body_mb` in bytes; 0 means the 1 MiB default (spec 2.9). */
export function bodyCapBytes(maxBodyMb: number): number {
  return Math.floor((maxBodyMb > 0 ? maxBodyMb : 1) * MIB);
}

/** `application/json` or any `+json` media type, parameters ignored. */
export function isJsonContentType(contentType: string | null): boolean {
  const media = (contentType ?? "").split(";")[0].trim().toLowerCase();
  return media === "application/json" || (media.startsWith("application/") && media.endsWith("+json"));
}

function tooLarge(cap: number): Error {
  return errors.tooLarge(
    `the JSON body is larger than server.max_body_mb (${+(cap / MIB).toFixed(3)} MiB = ${cap} bytes); send a smaller body or raise server.max_body_mb`,
  );
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

/**
 * The whole body, refusing it as soon as it passes `cap`. Bytes are counted as they
 * arrive: a missing or false `content-length` cannot get a bigger body through.
 */
async function readCapped(stream: ReadableStream<Uint8Array>, cap: number): Promise<Uint8Array> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  while (true) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > cap) {
      void discardRest(reader);
      throw tooLarge(cap);
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

/** One decoder for every request (building one is a measurable part of a small request). */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Media types a client may put on a JSON body without meaning anything else: none at all,
 * `text/plain`, and curl's `-d` default. On a path LLM services serve such a body is read to
 * see whether it is a JSON object (spec 1, 4.5: the LLM mode and the model come from the JSON
 * body, not from the header). Multipart, octet-stream, audio, ... are never read.
 */
const UNTYPED = new Set(["", "text/plain", "application/x-www-form-urlencoded"]);

export function isUntypedContentType(contentType: string): boolean {
  return UNTYPED.has(contentType.split(";")[0].trim().toLowerCase());
}

function parseObject(bytes: Uint8Array): Record<string, unknown> {
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw errors.badRequest("the request body is not valid UTF-8; send JSON encoded as UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const where = findJsonSyntaxError(text);
    const detail = where
      ? `${where.detail} at line ${where.line}, column ${where.column} (character ${where.offset})`
      : (error as Error).message;
    throw errors.badRequest(`the request body is not valid JSON: ${detail}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw errors.badRequest(`the JSON body must be an object (it carries "model"), not ${Array.isArray(value) ? "an array" : typeof value === "object" ? "null" : `a ${typeof value}`}`);
  }
  return value as Record<string, unknown>;
}

/** The first byte that is not JSON whitespace is `{`: worth trying to parse as a JSON object. */
function looksLikeObject(bytes: Uint8Array): boolean {
  for (const byte of bytes) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b;
  }
  return false;
}

/**
 * An untyped body (see UNTYPED) on a path LLM services serve: read whole within `cap` (413
 * past it, as a JSON body), then a JSON body when it parses as a JSON object, else the bytes
 * as they came, for the direct proxy.
 */
export async function readUntypedBody(request: Request, stream: ReadableStream<Uint8Array>, contentType: string, cap: number): Promise<SyncBody> {
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > cap) throw tooLarge(cap);
  const bytes = await readCapped(stream, cap);
  if (looksLikeObject(bytes)) {
    try {
      return { kind: "json", value: parseObject(bytes), bytes, retyped: true };
    } catch {
      // Not JSON after all: the direct proxy forwards it as it came.
    }
  }
  return { kind: "read", bytes, contentType };
}

export async function readSyncBody(request: Request, cap: number): Promise<SyncBody> {
  const contentType = request.headers.get("content-type");
  if (request.method === "GET" || request.method === "HEAD") return { kind: "stream", stream: null, contentType: contentType ?? "" };
  if (!isJsonContentType(contentType)) {
    return { kind: "stream", stream: request.body, contentType: contentType ?? "" };
  }
  // An honest content-length over the cap is refused before reading anything.
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > cap) throw tooLarge(cap);
  // With a content-length the HTTP framing bounds the body (the server reads exactly that
  // many bytes), so it is read in one go: on Node that skips building a web stream for it,
  // the largest single cost of a small JSON request. Without one (chunked), it is counted.
  const bytes = Number.isFinite(declared)
    ? new Uint8Array(await request.arrayBuffer())
    : request.body
      ? await readCapped(request.body, cap)
      : new Uint8Array(0);
  // No body at all (a DELETE sent with a JSON content type, say) is forwarded as none.
  if (bytes.byteLength === 0) return { kind: "stream", stream: null, contentType: contentType ?? "" };
  return { kind: "json", value: parseObject(bytes), bytes };
}
