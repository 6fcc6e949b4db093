/**
 * A key repeated at the top level of a JSON object. `JSON.parse` keeps the last of two equal
 * keys while other parsers keep the first, so `{"model":"a","model":"b"}` would be routed,
 * checked and billed as "b" and served by a backend as "a". This runs on every JSON request, so
 * it is cheap: the keys the text spells at the top level are counted in one pass that jumps over
 * strings (`indexOf` to the closing quote) and compared with the parsed object's own keys; only
 * a text that has more is walked again to name the key (a refusal, never the normal path).
 */
import { stringEnd } from "./json-depth.ts";

const QUOTE = 0x22;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * Calls `onKey` with the offsets of each quoted top-level key of `text` (valid JSON whose value
 * is an object): from its opening quote to its closing one.
 */
function eachTopLevelKey(text: string, onKey: (open: number, close: number) => void): void {
  let depth = 0;
  // At the top level a string right after `{` or `,` is a key; one after `:` is a value.
  let keyNext = false;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      const close = stringEnd(text, i);
      if (depth === 1 && keyNext) {
        onKey(i, close);
        keyNext = false;
      }
      i = close;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth === 1) keyNext = true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
    } else if (code === COMMA && depth === 1) {
      keyNext = true;
    }
  }
}

/** The first key `text` spells twice at its top level, decoded (`"mod\u0065l"` is `model`). */
function firstRepeated(text: string): string | undefined {
  const seen = new Set<string>();
  let repeated: string | undefined;
  eachTopLevelKey(text, (open, close) => {
    if (repeated !== undefined) return;
    const spelled = text.slice(open, close + 1);
    const key = spelled.includes("\\") ? (JSON.parse(spelled) as string) : spelled.slice(1, -1);
    if (seen.has(key)) repeated = key;
    seen.add(key);
  });
  return repeated;
}

/**
 * The key that appears more than once at the top level of `text`, or undefined when none does.
 * `text` is valid JSON and `parsed` what `JSON.parse` made of it, an object.
 */
export function repeatedTopLevelKey(text: string, parsed: Record<string, unknown>): string | undefined {
  let spelled = 0;
  eachTopLevelKey(text, () => spelled++);
  return spelled > Object.keys(parsed).length ? firstRepeated(text) : undefined;
}
