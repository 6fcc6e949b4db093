/**
 * The matching kinds, `regex` and `pii`: where in a text their values are, and the text with
 * them masked. Matches never overlap: the first pattern (or entity) to claim a span keeps it.
 */
import { needsNoEscape } from "../../core/llm/json-text.ts";
import { type Finder, regexFinder, type Span } from "./finder.ts";
import { entityMatchers } from "./pii.ts";

export interface Match {
  start: number;
  end: number;
  replacement: string;
}

export interface TextMatcher {
  /** The matches in `text`, in order, none overlapping. */
  find(text: string): Match[];
  /** The longest text a match can be, when known: a stream holds back less than that (else the rule's `stream_window`). */
  readonly maxLength?: number;
  /** Every mask it writes needs no escape in JSON (core/llm/json-text.ts). */
  readonly plainMasks: boolean;
}

interface Source {
  find: Finder;
  replacement: string;
  valid?(text: string, start: number, end: number): boolean;
}

/**
 * Each source's matches (in order and apart from each other, as a global expression finds them)
 * merged in order with those of the sources before it, a match that overlaps one of theirs left
 * out: one pass per source.
 */
function findAll(sources: readonly Source[], text: string): Match[] {
  let found: Match[] = [];
  const span: Span = { start: 0, end: 0 };
  for (const { find, replacement, valid } of sources) {
    let merged: Match[] | undefined;
    // The next of `found` not yet in `merged`.
    let next = 0;
    for (let more = find(text, 0, span); more; more = find(text, span.end > span.start ? span.end : span.start + 1, span)) {
      const { start, end } = span;
      if (end === start || (valid && !valid(text, start, end))) continue;
      merged ??= [];
      while (next < found.length && found[next].end <= start) merged.push(found[next++]);
      if (next < found.length && found[next].start < end) continue;
      merged.push({ start, end, replacement });
    }
    if (!merged) continue;
    while (next < found.length) merged.push(found[next++]);
    found = merged;
  }
  return found;
}

export function regexMatcher(patterns: readonly string[], maskWith: string): TextMatcher {
  const sources = patterns.map((pattern) => ({ find: regexFinder(new RegExp(pattern, "g")), replacement: maskWith }));
  return { find: (text) => findAll(sources, text), plainMasks: needsNoEscape(maskWith) };
}

export function piiMatcher(entities: readonly string[]): TextMatcher {
  const matchers = entityMatchers(entities);
  const sources = matchers.map(({ find, mask, valid }) => ({ find, replacement: mask, valid }));
  return {
    find: (text) => findAll(sources, text),
    maxLength: Math.max(0, ...matchers.map((m) => m.maxLength)),
    plainMasks: sources.every((source) => needsNoEscape(source.replacement)),
  };
}

/** `text` with `matches` (in order, none overlapping) replaced. */
export function masked(text: string, matches: readonly Match[]): string {
  let out = "";
  let at = 0;
  for (const match of matches) {
    out += text.slice(at, match.start) + match.replacement;
    at = match.end;
  }
  return out + text.slice(at);
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;
const cutsPair = (text: string, at: number) => isHighSurrogate(text.charCodeAt(at - 1)) && isLowSurrogate(text.charCodeAt(at));

/** No match of `matches` starts or ends between the two halves of a surrogate pair of `text` (a `regex` pattern's `.` can). */
export function keepsPairs(text: string, matches: readonly Match[]): boolean {
  return matches.every((match) => !cutsPair(text, match.start) && !cutsPair(text, match.end));
}
