/**
 * Reads the sync request body the way the route needs it (docs/design.md#sync-requests and
 * docs/design.md#errors): a JSON body is read whole because `model` is in it, capped at
 * `server.max_body_mb`; any other body is left as an unread stream so a large multipart upload goes
 * to the backend as it arrives. Reading and parsing is the core's shared JSON body reader; this
 * file decides which bodies go through it and what the route requires of them (an object).
 */
import { errors } from "../../core/errors.ts";
import { isRecord } from "../../core/llm/json.ts";
import type { SyncBody } from "../../core/proxy/modes.ts";
import { parseJsonBytes } from "../../core/request-body/json-body.ts";
import { type BodyLimit, readBodyBytes, readStreamCapped, tooLarge } from "../../core/request-body/read-bytes.ts";

const MIB = 1024 * 1024;

/**
 * `server.max_body_mb` as a body limit; 0 means the 1 MiB default (docs/design.md#sync-requests).
 */
export function syncBodyLimit(maxBodyMb: number): BodyLimit {
  return {
    maxBytes: Math.floor((maxBodyMb > 0 ? maxBodyMb : 1) * MIB),
    name: "server.max_body_mb",
    remedy: "send a smaller body or raise server.max_body_mb",
  };
}

/** `application/json` or any `+json` media type, parameters ignored. */
export function isJsonContentType(contentType: string | null): boolean {
  const media = (contentType ?? "").split(";")[0].trim().toLowerCase();
  return media === "application/json" || (media.startsWith("application/") && media.endsWith("+json"));
}

/**
 * Media types a client may put on a JSON body without meaning anything else: none at all,
 * `text/plain`, and curl's `-d` default. On a path LLM services serve such a body is read to
 * see whether it is a JSON object (docs/design.md#request-modes and docs/design.md#sync-requests:
 * the LLM mode and the model come from the JSON body, not from the header). Multipart,
 * octet-stream, audio, ... are never read.
 */
const UNTYPED = new Set(["", "text/plain", "application/x-www-form-urlencoded"]);

export function isUntypedContentType(contentType: string): boolean {
  return UNTYPED.has(contentType.split(";")[0].trim().toLowerCase());
}

function kindOf(value: unknown): string {
  return Array.isArray(value) ? "an array" : value === null ? "null" : `a ${typeof value}`;
}

/** The JSON body must be an object: it carries "model". */
function asObject(value: unknown): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw errors.badRequest(`the JSON body must be an object (it carries "model"), not ${kindOf(value)}`);
  }
  return value as Record<string, unknown>;
}

/** The first byte that is not JSON whitespace (nor a leading BOM) is `{`: worth trying to parse as a JSON object. */
function looksLikeObject(bytes: Uint8Array): boolean {
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  for (let i = start; i < bytes.byteLength; i++) {
    const byte = bytes[i];
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b;
  }
  return false;
}

/**
 * An untyped body (see UNTYPED) on a path LLM services serve: read whole within `limit`
 * (413 past it, as a JSON body), then a JSON body when it parses as a JSON object, else the
 * bytes as they came, for the direct proxy. One nested too deep or with a top-level key twice
 * is refused like a JSON body: it is meant as one, and forwarding it as bytes would let it past
 * the LLM mode.
 */
export async function readUntypedBody(request: Request, stream: ReadableStream<Uint8Array>, contentType: string, limit: BodyLimit): Promise<SyncBody> {
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit.maxBytes) throw tooLarge(limit);
  const bytes = await readStreamCapped(stream, limit);
  if (looksLikeObject(bytes)) {
    const parsed = parseJsonBytes(bytes);
    if (parsed.ok && isRecord(parsed.json.value)) {
      return { kind: "json", value: parsed.json.value, bytes: parsed.json.bytes, escapeFree: parsed.json.escapeFree, keys: parsed.json.keys, retyped: true };
    }
    if (!parsed.ok && (parsed.problem === "depth" || parsed.problem === "duplicate")) throw errors.badRequest(parsed.message);
    // Not JSON after all: the direct proxy forwards it as it came.
  }
  return { kind: "read", bytes, contentType };
}

/** Methods whose requests carry a body: an empty one sent as JSON is a mistake. */
const BODY_METHODS = new Set(["POST", "PUT", "PATCH"]);

export async function readSyncBody(request: Request, limit: BodyLimit): Promise<SyncBody> {
  const contentType = request.headers.get("content-type");
  if (request.method === "GET" || request.method === "HEAD") return { kind: "stream", stream: null, contentType: contentType ?? "" };
  if (!isJsonContentType(contentType)) {
    return { kind: "stream", stream: request.body, contentType: contentType ?? "" };
  }
  const bytes = await readBodyBytes(request, limit);
  // No body at all on a method that needs none (a DELETE sent with a JSON content type) is forwarded as none.
  if (bytes.byteLength === 0 && !BODY_METHODS.has(request.method)) return { kind: "stream", stream: null, contentType: contentType ?? "" };
  const parsed = parseJsonBytes(bytes, "a JSON object (the content type says JSON)");
  if (!parsed.ok) throw errors.badRequest(parsed.message);
  return { kind: "json", value: asObject(parsed.json.value), bytes: parsed.json.bytes, escapeFree: parsed.json.escapeFree, keys: parsed.json.keys };
}
