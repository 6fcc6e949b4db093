/**
 * A key repeated in a JSON object. `JSON.parse` keeps the last of two equal keys while other
 * parsers keep the first, so `{"model":"a","model":"b"}` would be routed, checked and billed as
 * "b" and served by a backend as "a". This runs on every JSON request, so it is cheap: the keys
 * the text spells are counted in one pass that jumps over strings (`indexOf` to the closing
 * quote) and compared with the parsed object's own keys; only a text that has more is walked
 * again to name the key (a refusal, never the normal path). Every request is checked at the top
 * level; a request whose texts the gateway reads and then forwards as they came (input
 * guardrails) is checked at every depth, from the count kept (`ParsedJson.keys`).
 */
import { MAX_JSON_DEPTH, stringEnd } from "./json-depth.ts";

const QUOTE = 0x22;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** What each container on the way to a character is, by depth (1: the top level); JSON deeper than MAX_JSON_DEPTH is refused before this runs. */
const OBJECT = 1;
const containers = new Uint8Array(MAX_JSON_DEPTH + 2);

interface KeyVisitor {
  /** An object opens at `depth`. */
  object?(depth: number): void;
  /** A key, from its opening quote to its closing one, in the object at `depth`. */
  key(open: number, close: number, depth: number): void;
}

/** Walks the keys of `text` (valid JSON) in one pass that jumps over strings. */
function eachKey(text: string, visitor: KeyVisitor): void {
  let depth = 0;
  // In an object a string right after `{` or `,` is a key; one after `:` is a value.
  let keyNext = false;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      const close = stringEnd(text, i);
      if (keyNext) {
        visitor.key(i, close, depth);
        keyNext = false;
      }
      i = close;
    } else if (code === OPEN_BRACE) {
      containers[++depth] = OBJECT;
      visitor.object?.(depth);
      keyNext = true;
    } else if (code === OPEN_BRACKET) {
      containers[++depth] = 0;
      keyNext = false;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
      keyNext = false;
    } else if (code === COMMA) {
      keyNext = containers[depth] === OBJECT;
    }
  }
}

/** The key `text` spells from `open` to `close`, decoded (`"mod\u0065l"` is `model`). */
function keyAt(text: string, open: number, close: number): string {
  const spelled = text.slice(open, close + 1);
  return spelled.includes("\\") ? (JSON.parse(spelled) as string) : spelled.slice(1, -1);
}

/** The first key `text` spells twice in one object (only in the top-level object, with `topLevel`). */
function firstRepeated(text: string, topLevel: boolean): string | undefined {
  // The keys of each open object, by depth.
  const seen: Array<Set<string>> = [];
  let repeated: string | undefined;
  eachKey(text, {
    object: (depth) => (seen[depth] = new Set()),
    key(open, close, depth) {
      if (repeated !== undefined || (topLevel && depth !== 1)) return;
      const key = keyAt(text, open, close);
      if (seen[depth].has(key)) repeated = key;
      seen[depth].add(key);
    },
  });
  return repeated;
}

/** How many keys `text` spells: at its top level, and in all. */
export interface SpelledKeys {
  top: number;
  all: number;
}

export function spelledKeys(text: string): SpelledKeys {
  const keys = { top: 0, all: 0 };
  eachKey(text, {
    key(_open, _close, depth) {
      keys.all++;
      if (depth === 1) keys.top++;
    },
  });
  return keys;
}

/** How many own keys the objects of a parsed JSON value have, at every depth. */
export function ownKeyCount(value: unknown): number {
  if (Array.isArray(value)) {
    let count = 0;
    for (const item of value) count += ownKeyCount(item);
    return count;
  }
  if (typeof value !== "object" || value === null) return 0;
  let count = 0;
  for (const key in value) count += 1 + ownKeyCount((value as Record<string, unknown>)[key]);
  return count;
}

/**
 * The key that appears more than once at the top level of `text`, or undefined when none does.
 * `text` is valid JSON, `parsed` what `JSON.parse` made of it (an object) and `spelled` its keys.
 */
export function repeatedTopLevelKey(text: string, parsed: Record<string, unknown>, spelled: SpelledKeys = spelledKeys(text)): string | undefined {
  return spelled.top > Object.keys(parsed).length ? firstRepeated(text, true) : undefined;
}

/**
 * The key that appears more than once in one object anywhere in `text`, or undefined when none
 * does: `spelled` counts more keys than `parsed` has, JSON.parse having kept one of each.
 */
export function repeatedKey(text: string, parsed: unknown, spelled: SpelledKeys = spelledKeys(text)): string | undefined {
  return spelled.all > ownKeyCount(parsed) ? firstRepeated(text, false) : undefined;
}
