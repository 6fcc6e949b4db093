/**
 * How a cached answer is stored: one JSON string per key. The body is kept as text when it is
 * valid UTF-8 (every JSON answer) and as base64 otherwise, so a passthrough backend's bytes
 * come back exactly as they were sent.
 */
import type { CachedAnswer } from "../../core/llm/cache.ts";
import type { Bytes } from "../../core/llm/json.ts";
import { isRecord } from "../../core/llm/provider.ts";

interface StoredEntry {
  status: number;
  contentType: string;
  text?: string;
  base64?: string;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function fromBase64(text: string): Bytes {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

export function encodeEntry(answer: CachedAnswer): string {
  const entry: StoredEntry = { status: answer.status, contentType: answer.contentType };
  try {
    entry.text = strictUtf8.decode(answer.body);
  } catch {
    entry.base64 = toBase64(answer.body);
  }
  return JSON.stringify(entry);
}

/** The stored answer; throws on a value this code did not write (counted as a get error). */
export function decodeEntry(stored: string): CachedAnswer {
  const entry: unknown = JSON.parse(stored);
  if (!isRecord(entry) || typeof entry.status !== "number" || typeof entry.contentType !== "string") {
    throw new Error("not a cache entry");
  }
  if (typeof entry.text === "string") return { status: entry.status, contentType: entry.contentType, body: new TextEncoder().encode(entry.text) };
  if (typeof entry.base64 === "string") return { status: entry.status, contentType: entry.contentType, body: fromBase64(entry.base64) };
  throw new Error("cache entry without a body");
}
