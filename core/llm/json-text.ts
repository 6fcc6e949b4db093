/**
 * A request body written as JSON again after hooks changed some of its texts (a masked prompt),
 * with its long texts put in between quotes as they are instead of through `JSON.stringify`,
 * which reads every character of a string for escapes: 3.6 µs for a 2 KB prompt on Node 20,
 * as much as the rules that masked it (docs/guardrails.md#cost).
 *
 * A text may go in as it is only when it needs no escape: no quote, backslash or control
 * character, no lone surrogate. That is known without reading it when the body's JSON held no
 * backslash (`escapeFree`, found where it was parsed or written: JSON holds those characters
 * only escaped), for the texts the hooks got and for a text a hook wrote from one of them by
 * replacing spans with strings that need no escape either, cutting no surrogate pair: the hook
 * says so with `noteDerivedText`. Any other string goes through `JSON.stringify`, so the JSON is
 * the same either way (test/core/llm/json-text.test.ts compares them).
 */
import { MAX_JSON_DEPTH } from "../request-body/json-depth.ts";
import type { JsonObject } from "./json.ts";

/** Shorter strings go through `JSON.stringify`: a placeholder and a splice cost more than reading them. */
const VERBATIM_MIN_UNITS = 256;

/** What `JSON.stringify` escapes in a string: a quote, a backslash, a control character, a lone surrogate. */
// deno-lint-ignore no-control-regex -- the control characters are what it looks for
const NEEDS_ESCAPE = /["\\\u0000-\u001f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether `text` is written in JSON as it is (between quotes). For constants, such as a mask: it reads every character. */
export const needsNoEscape = (text: string): boolean => !NEEDS_ESCAPE.test(text);

/**
 * On a holder: key -> the text written there and the text it was written from. A property of the
 * holder rather than a WeakMap entry: a WeakMap that takes every masked request's objects as
 * keys made the collector's work grow more than the writing saved. `JSON.stringify` skips
 * symbol keys; a copy of the holder carries the note, which is believed only for the same text.
 */
const DERIVED_TEXTS: unique symbol = Symbol("derived texts");

/** key, text, from: three entries a note (an array, cheaper to make than a Map for the one or two a holder gets). */
type DerivedTexts = string[];
type Holder = Record<string, unknown> & { [DERIVED_TEXTS]?: DerivedTexts };

/**
 * Notes that `holder[key]` was set to `text`, written from `from` (the text the hook read at that
 * place) by replacing spans of it with strings that need no escape, no span starting or ending
 * inside a surrogate pair. A note is believed only while `holder[key]` still is `text` and
 * `from` is the text the body had at that place.
 */
export function noteDerivedText(holder: object, key: string | number, text: string, from: string): void {
  if (text.length < VERBATIM_MIN_UNITS) return;
  // A new array each time: a copy of the holder shares the one it was copied with.
  const notes = (holder as Holder)[DERIVED_TEXTS];
  (holder as Holder)[DERIVED_TEXTS] = notes ? [...notes, String(key), text, from] : [String(key), text, from];
}

/** Unlikely in a body, and checked: a placeholder found twice (a hook wrote one) writes the body with `JSON.stringify`. */
const PLACEHOLDER = "\u0000gateway-verbatim-text-";

/** The `i`th placeholder and how `JSON.stringify` writes it, made once. */
const placeholders: Array<{ text: string; literal: string }> = [];
function placeholder(i: number): { text: string; literal: string } {
  while (placeholders.length <= i) {
    const text = PLACEHOLDER + placeholders.length;
    placeholders.push({ text, literal: JSON.stringify(text) });
  }
  return placeholders[i];
}

/** Deeper than a parsed request body can be (core/request-body/json-depth.ts refuses deeper ones). */
const MAX_WALK_DEPTH = MAX_JSON_DEPTH + 2;

/** The places whose strings go in as they are: holder, key and string, three entries each. */
type Found = Array<Holder | string>;

/**
 * The long strings of `changed` (found in place, `original` walked beside it) that need no
 * escape: the original's own text at the same place, or one noted as written from it.
 */
function findVerbatim(changed: unknown, original: unknown, found: Found, depth: number): void {
  // Deeper than a parsed body can be (a hook's cyclic object): left to JSON.stringify, which says so.
  if (depth > MAX_WALK_DEPTH) return;
  if (Array.isArray(changed)) {
    const originals = Array.isArray(original) ? original : [];
    for (let i = 0; i < changed.length; i++) visit(changed as unknown as Holder, String(i), originals[i], found, depth);
  } else if (typeof changed === "object" && changed !== null) {
    const originals = typeof original === "object" && original !== null ? original as Record<string, unknown> : {};
    for (const key of Object.keys(changed)) visit(changed as Holder, key, originals[key], found, depth);
  }
}

/** A note says `value` at `key` was written from `original`. */
function noted(notes: DerivedTexts | undefined, key: string, value: string, original: unknown): boolean {
  if (notes === undefined) return false;
  for (let i = notes.length - 3; i >= 0; i -= 3) {
    if (notes[i] === key) return notes[i + 1] === value && notes[i + 2] === original;
  }
  return false;
}

function visit(holder: Holder, key: string, original: unknown, found: Found, depth: number): void {
  const value = holder[key];
  if (typeof value !== "string") return findVerbatim(value, original, found, depth + 1);
  if (value.length < VERBATIM_MIN_UNITS) return;
  if (value !== original && !noted(holder[DERIVED_TEXTS], key, value, original)) return;
  found.push(holder, key, value);
}

/** A body's JSON in pieces (their concatenation), and whether it holds no backslash (`ParsedJson.escapeFree`). */
export interface JsonPieces {
  pieces: string[];
  escapeFree: boolean;
}

const whole = (json: string): JsonPieces => ({ pieces: [json], escapeFree: !json.includes("\\") });

/**
 * `JSON.stringify(changed)` in pieces, where `changed` is `original.value` with some texts
 * replaced by hooks (objects on the way to a replaced text copied, the rest shared).
 * `original.escapeFree`: its JSON held no backslash, so its strings need no escape. The long
 * strings that need none are swapped for placeholders while the rest is written (the objects
 * are as they were when it returns), and are pieces of their own between the written parts:
 * the pieces are encoded one after the other (utf8-blocks.ts `utf8Pieces`), never joined into
 * one more copy of the body.
 */
export function changedBodyPieces(changed: JsonObject, original: { value: JsonObject; escapeFree?: boolean }): JsonPieces {
  if (!original.escapeFree) return whole(JSON.stringify(changed));
  const found: Found = [];
  findVerbatim(changed, original.value, found, 0);
  if (found.length === 0) return whole(JSON.stringify(changed));
  let swapped = 0;
  let skeleton: string | undefined;
  try {
    for (; swapped < found.length; swapped += 3) (found[swapped] as Holder)[found[swapped + 1] as string] = placeholder(swapped / 3).text;
    skeleton = JSON.stringify(changed);
  } catch {
    // An object that takes no new value (frozen): written as it is, below.
  } finally {
    for (let i = 0; i < swapped; i += 3) (found[i] as Holder)[found[i + 1] as string] = found[i + 2];
  }
  if (skeleton === undefined) return whole(JSON.stringify(changed));
  const pieces: string[] = [];
  let escapeFree = true;
  let at = 0;
  for (let i = 0; i < found.length; i += 3) {
    const { literal } = placeholder(i / 3);
    const start = skeleton.indexOf(literal, at);
    if (start === -1 || skeleton.indexOf(literal, start + literal.length) !== -1) return whole(JSON.stringify(changed));
    // The written part up to the placeholder's opening quote, then the text (which needs no escape).
    const written = skeleton.slice(at, start + 1);
    if (escapeFree && written.includes("\\")) escapeFree = false;
    pieces.push(written, found[i + 2] as string);
    at = start + literal.length - 1;
  }
  const rest = skeleton.slice(at);
  pieces.push(rest);
  return { pieces, escapeFree: escapeFree && !rest.includes("\\") };
}

/** `JSON.stringify(changed)` as `changedBodyPieces` writes it, in one string. */
export const changedBodyJson = (changed: JsonObject, original: { value: JsonObject; escapeFree?: boolean }): string =>
  changedBodyPieces(changed, original).pieces.join("");
