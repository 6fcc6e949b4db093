/**
 * How deeply a JSON text nests, checked before it is parsed. `JSON.parse` takes 100,000
 * nested arrays in its stride, but everything after it that walks the value recursively
 * (`JSON.stringify` when the body is rewritten, the cache key) overflows the call stack.
 * This runs on every JSON request, so it is cheap: a text with at most `max` opening brackets
 * in all (a typical chat body has a few dozen) cannot nest deeper, which `indexOf` settles
 * several times faster than a walk; only other texts get the walk, one pass with no
 * allocation that counts brackets and jumps over strings (brackets inside them do not count).
 */

/** The deepest nesting a JSON request body may have: arrays and objects inside each other. */
export const MAX_JSON_DEPTH = 128;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Whether `text` opens more than `max` arrays/objects inside each other (strings skipped). */
export function nestsDeeperThan(text: string, max: number): boolean {
  if (opensAtMost(text, max)) return false;
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      i = stringEnd(text, i);
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** Offset of the quote closing the string opened at `open` (the end of the text when none). */
export function stringEnd(text: string, open: number): number {
  let at = open;
  while (true) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return text.length;
    // Escaped when preceded by an odd number of backslashes.
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}

/** At most `max` `{` and `[` in the whole text, strings included. */
function opensAtMost(text: string, max: number): boolean {
  let count = 0;
  for (let at = text.indexOf("{"); at >= 0; at = text.indexOf("{", at + 1)) if (++count > max) return false;
  for (let at = text.indexOf("["); at >= 0; at = text.indexOf("[", at + 1)) if (++count > max) return false;
  return true;
}
