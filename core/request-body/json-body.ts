/**
 * A JSON request body read and parsed the one way every route does it: bounded in bytes
 * (413), UTF-8 (400), not empty (400), nested at most `MAX_JSON_DEPTH` deep (400), valid JSON
 * (400 saying where it broke). A leading byte order mark is dropped from the bytes too, so
 * what is forwarded is exactly what was parsed (RFC 8259 8.1: a parser may ignore a BOM, a
 * sender must not add one).
 */
import { errors } from "../errors.ts";
import { isRecord } from "../llm/json.ts";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "./json-depth.ts";
import { repeatedTopLevelKey, type SpelledKeys, spelledKeys } from "./json-keys.ts";
import { findJsonSyntaxError } from "./json-syntax.ts";
import { type BodyLimit, readBodyBytes } from "./read-bytes.ts";

export interface ParsedJson {
  value: unknown;
  /** The body as it should be forwarded: the bytes read, without a leading BOM. */
  bytes: Uint8Array;
  /** The JSON holds no backslash: each string of `value` is written in `bytes` as it is (core/llm/json-text.ts). */
  escapeFree: boolean;
  /** How many keys the JSON spells at every depth, a repeated one counted each time (json-keys.ts); undefined for a value that is not an object. */
  keys: number | undefined;
}

export type JsonParse = { ok: true; json: ParsedJson } | { ok: false; problem: "empty" | "encoding" | "depth" | "syntax" | "duplicate"; message: string };

/** `ignoreBOM`: the BOM is cut from the bytes first; a second one must stay and fail to parse. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function withoutBom(bytes: Uint8Array): Uint8Array {
  return bytes.byteLength >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
}

/** The bytes of a body parsed as JSON, or what is wrong with them (a message saying what to fix). */
export function parseJsonBytes(read: Uint8Array, expected = "a JSON body"): JsonParse {
  const bytes = withoutBom(read);
  if (bytes.byteLength === 0) return { ok: false, problem: "empty", message: `the request body is empty; send ${expected}` };
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return { ok: false, problem: "encoding", message: "the request body is not valid UTF-8; send JSON encoded as UTF-8" };
  }
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    return {
      ok: false,
      problem: "depth",
      message: `the JSON body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep, the limit; send a flatter body`,
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    const where = findJsonSyntaxError(text);
    const detail = where ? `${where.detail} at line ${where.line}, column ${where.column} (character ${where.offset})` : (error as Error).message;
    return { ok: false, problem: "syntax", message: `the request body is not valid JSON: ${detail}` };
  }
  // Parsers disagree on which of two equal keys wins: the gateway and the backend could read different requests.
  let spelled: SpelledKeys | undefined;
  let repeated: string | undefined;
  if (isRecord(value)) {
    spelled = spelledKeys(text);
    repeated = repeatedTopLevelKey(text, value, spelled);
  }
  if (repeated !== undefined) {
    return { ok: false, problem: "duplicate", message: `the JSON body has the field ${JSON.stringify(repeated)} more than once; send each field once` };
  }
  return { ok: true, json: { value, bytes, escapeFree: !text.includes("\\"), keys: spelled?.all } };
}

export interface JsonBodyOptions {
  limit: BodyLimit;
  /** What the route wants, for the empty-body message (`a JSON body {"model": ...}`). */
  expected?: string;
}

/** The request's body parsed as JSON, whatever its content type; a GatewayError (400, 413) otherwise. */
export async function readJsonBody(request: Request, options: JsonBodyOptions): Promise<ParsedJson> {
  const parsed = parseJsonBytes(await readBodyBytes(request, options.limit), options.expected);
  if (!parsed.ok) throw errors.badRequest(parsed.message);
  return parsed.json;
}
