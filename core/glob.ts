/**
 * Shell-style globs for model aliases and service types (docs/design.md#access-policies): `*` any
 * run of characters (including `/`, since aliases such as `meta/llama-3` are names, not paths),
 * `?` one character, `[abc]` / `[a-z]` a class, `[!abc]` / `[^abc]` a negated class.
 * Everything else is literal; matching is case-sensitive over the whole string.
 * Compiled once per runtime: rules never change while a runtime lives.
 */

export type Glob = (value: string) => boolean;

export class GlobError extends Error {
  override name = "GlobError";
}

/** Escapes regex syntax characters (the only identity escapes the `u` flag allows outside a class). */
function escapeRegex(char: string): string {
  return /[.*+?^${}()|[\]\\/]/.test(char) ? `\\${char}` : char;
}

/** Escapes the characters that mean something inside a regex class. */
function escapeInClass(char: string): string {
  return /[\\\][^-]/.test(char) ? `\\${char}` : char;
}

/** The regex source of a `[...]` class opening at `open`, or undefined when it never closes (then `[` is literal). */
function classAt(chars: readonly string[], open: number): { source: string; end: number } | undefined {
  let i = open + 1;
  const negated = chars[i] === "!" || chars[i] === "^";
  if (negated) i++;
  // A `]` right after the opening (or its negation) is a member, as in POSIX globs.
  const first = i;
  let body = "";
  for (; i < chars.length; i++) {
    const char = chars[i];
    if (char === "]" && i > first) return { source: `[${negated ? "^" : ""}${body}]`, end: i };
    // A `-` between two members is a range; first or last it is a member.
    const isRange = char === "-" && i > first && i + 1 < chars.length && chars[i + 1] !== "]";
    body += isRange ? "-" : escapeInClass(char);
  }
  return undefined;
}

/** Throws `GlobError` for a class the regex engine refuses (a reversed range such as `[z-a]`). */
export function globToRegExp(pattern: string): RegExp {
  // Code points, not UTF-16 units, so `?` is one character even outside the BMP.
  const chars = [...pattern];
  let source = "";
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i];
    if (char === "*") source += "[\\s\\S]*";
    else if (char === "?") source += "[\\s\\S]";
    else if (char === "[") {
      const found = classAt(chars, i);
      source += found ? found.source : "\\[";
      if (found) i = found.end;
    } else source += escapeRegex(char);
  }
  try {
    return new RegExp(`^${source}$`, "u");
  } catch (error) {
    throw new GlobError(`invalid glob "${pattern}": ${(error as Error).message}`);
  }
}

export function compileGlob(pattern: string): Glob {
  // The common cases skip the regex engine.
  if (pattern === "*") return () => true;
  if (!/[*?[]/.test(pattern)) return (value) => value === pattern;
  const regex = globToRegExp(pattern);
  return (value) => regex.test(value);
}

/** True when any of the globs matches (never, for an empty list). */
export function anyGlob(globs: readonly string[]): Glob {
  const compiled = globs.map(compileGlob);
  // A loop, not `some` with an arrow: that arrow is a new closure on every call (per request).
  return (value) => {
    for (const glob of compiled) if (glob(value)) return true;
    return false;
  };
}
