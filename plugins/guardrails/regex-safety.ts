/**
 * Regular expressions a rule may run (docs/guardrails.md#regular-expressions): JavaScript's
 * engine backtracks and cannot be stopped once a match runs, so a pattern that can backtrack
 * catastrophically on a long input would hold the gateway's event loop. Such a pattern is
 * refused at load rather than run with a bound: a group with an unbounded quantifier inside
 * that is itself repeated (`(a+)+`, `(\w+\s?)*`, `(x*){2,}`), and backreferences (`\1`),
 * which cannot be matched without backtracking. The check reads the pattern's structure; it
 * does not prove a pattern safe (overlapping alternatives under a repeat, `(a|a)*`, pass it).
 */

interface Group {
  /** An unbounded quantifier (`*`, `+`, `{n,}`) is somewhere inside. */
  unbounded: boolean;
}

/** The quantifier starting at `i` (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`): its length and whether it repeats without bound or more than once. */
function quantifierAt(pattern: string, i: number): { length: number; unbounded: boolean; repeats: boolean } | undefined {
  const char = pattern[i];
  if (char === "*" || char === "+") return { length: pattern[i + 1] === "?" ? 2 : 1, unbounded: true, repeats: true };
  if (char === "?") return { length: 1, unbounded: false, repeats: false };
  if (char !== "{") return undefined;
  const match = /^\{(\d+)(,(\d*))?\}\??/.exec(pattern.slice(i));
  if (!match) return undefined;
  const max = match[2] === undefined ? Number(match[1]) : match[3] === "" ? Infinity : Number(match[3]);
  return { length: match[0].length, unbounded: max === Infinity, repeats: max > 1 };
}

/** Why `pattern` cannot be a rule's pattern (invalid, or able to backtrack catastrophically), or undefined. */
export function regexProblem(pattern: string): string | undefined {
  try {
    new RegExp(pattern, "g");
  } catch (error) {
    return `invalid regular expression: ${error instanceof Error ? error.message : String(error)}`;
  }
  const stack: Group[] = [{ unbounded: false }];
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === "\\") {
      if (!inClass && (/[1-9]/.test(pattern[i + 1] ?? "") || pattern.startsWith("k<", i + 1))) {
        return "backreferences are not allowed: they need a backtracking search (docs/guardrails.md#regular-expressions)";
      }
      i++;
      continue;
    }
    if (inClass) {
      if (char === "]") inClass = false;
      continue;
    }
    if (char === "[") {
      inClass = true;
      continue;
    }
    if (char === "(") {
      stack.push({ unbounded: false });
      continue;
    }
    if (char === ")") {
      const group = stack.pop() ?? { unbounded: false };
      const quantifier = quantifierAt(pattern, i + 1);
      if (quantifier?.repeats && group.unbounded && (quantifier.unbounded || quantifier.repeats)) {
        return `the group ending at character ${
          i + 1
        } repeats a part that is itself repeated without bound, which can backtrack catastrophically on a long input; ` +
          "rewrite it without the nested repetition (docs/guardrails.md#regular-expressions)";
      }
      const parent = stack[stack.length - 1];
      if (parent) parent.unbounded ||= group.unbounded || quantifier?.unbounded === true;
      if (quantifier) i += quantifier.length;
      continue;
    }
    const quantifier = quantifierAt(pattern, i);
    if (quantifier) {
      if (quantifier.unbounded) stack[stack.length - 1].unbounded = true;
      i += quantifier.length - 1;
    }
  }
  return undefined;
}
