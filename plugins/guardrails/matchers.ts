/**
 * The matching kinds, `regex` and `pii`: where in a text their values are, and the text with
 * them masked. Matches never overlap: the first pattern (or entity) to claim a span keeps it.
 */
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
}

interface Source {
  pattern: RegExp;
  replacement: string;
  valid?(value: string): boolean;
}

function findAll(sources: readonly Source[], text: string): Match[] {
  const found: Match[] = [];
  for (const { pattern, replacement, valid } of sources) {
    pattern.lastIndex = 0;
    for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
      const value = match[0];
      if (value.length === 0) {
        pattern.lastIndex++;
        continue;
      }
      if (valid && !valid(value)) continue;
      const start = match.index;
      const end = start + value.length;
      if (!found.some((other) => start < other.end && other.start < end)) found.push({ start, end, replacement });
    }
  }
  return found.sort((a, b) => a.start - b.start);
}

export function regexMatcher(patterns: readonly string[], maskWith: string): TextMatcher {
  const sources = patterns.map((pattern) => ({ pattern: new RegExp(pattern, "g"), replacement: maskWith }));
  return { find: (text) => findAll(sources, text) };
}

export function piiMatcher(entities: readonly string[]): TextMatcher {
  const matchers = entityMatchers(entities);
  const sources = matchers.map(({ pattern, mask, valid }) => ({ pattern, replacement: mask, valid }));
  return { find: (text) => findAll(sources, text), maxLength: Math.max(0, ...matchers.map((m) => m.maxLength)) };
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
