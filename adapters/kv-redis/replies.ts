/**
 * Narrowing of raw RESP2 replies (what `sendCommand` resolves with) to the types the
 * KvStore contract promises. A reply of an unexpected shape is a protocol or
 * programming error, so it throws instead of being coerced.
 */
import type { KvReply, ScanPage } from "../../core/stores/kv.ts";

function unexpected(what: string, reply: unknown): Error {
  return new TypeError(`unexpected Redis reply for ${what}: ${JSON.stringify(reply)}`);
}

export function asString(reply: unknown, what: string): string {
  if (typeof reply !== "string") throw unexpected(what, reply);
  return reply;
}

export function asNullableString(reply: unknown, what: string): string | null {
  return reply === null ? null : asString(reply, what);
}

export function asInteger(reply: unknown, what: string): number {
  if (typeof reply !== "number") throw unexpected(what, reply);
  return reply;
}

export function asStringArray(reply: unknown, what: string): string[] {
  if (!Array.isArray(reply)) throw unexpected(what, reply);
  return reply.map((item) => asString(item, what));
}

export function asNullableStringArray(reply: unknown, what: string): (string | null)[] {
  if (!Array.isArray(reply)) throw unexpected(what, reply);
  return reply.map((item) => asNullableString(item, what));
}

/** RESP2 sends a hash as a flat [field, value, field, value, …] array. */
export function asRecord(reply: unknown, what: string): Record<string, string> {
  const flat = asStringArray(reply, what);
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[flat[i]] = flat[i + 1];
  return record;
}

/** Redis doubles travel as text and spell infinity "inf". */
export function parseDouble(text: string): number {
  const lower = text.toLowerCase();
  if (lower === "inf" || lower === "+inf") return Infinity;
  if (lower === "-inf") return -Infinity;
  const value = Number(text);
  if (Number.isNaN(value)) throw new TypeError(`unexpected Redis double: ${text}`);
  return value;
}

export function formatDouble(value: number): string {
  if (value === Infinity) return "+inf";
  if (value === -Infinity) return "-inf";
  return String(value);
}

/** A Lua script's reply: integers, bulk strings, nil (Lua false/nil) and nested arrays. */
export function asKvReply(reply: unknown, what: string): KvReply {
  if (reply === null || typeof reply === "string" || typeof reply === "number") return reply;
  if (Array.isArray(reply)) return reply.map((item) => asKvReply(item, what));
  // A Lua error table nested in an array arrives as an error object inside the array.
  if (reply instanceof Error) throw reply;
  throw unexpected(what, reply);
}

/** SCAN replies [next cursor, keys]. */
export function asScanPage(reply: unknown): ScanPage {
  if (!Array.isArray(reply) || reply.length !== 2) throw unexpected("SCAN", reply);
  return { cursor: asString(reply[0], "SCAN"), keys: asStringArray(reply[1], "SCAN") };
}
