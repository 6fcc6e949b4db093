/**
 * Where a JSON text breaks, said the same way on every runtime. `JSON.parse` messages
 * differ between V8 versions (Node 20 and Deno word them differently, and some carry no
 * position), so after a failed parse this scanner finds the first offending character.
 * It is iterative (an explicit stack) so deeply nested input cannot overflow the call stack.
 */

export interface JsonSyntaxProblem {
  /** 0-based character offset. */
  offset: number;
  /** 1-based line and column. */
  line: number;
  column: number;
  /** What was expected or found there. */
  detail: string;
}

type Expect = "value" | "value-or-close" | "key" | "key-or-close" | "colon" | "comma-or-close" | "end";

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPES = new Set(['"', "\\", "/", "b", "f", "n", "r", "t"]);

function position(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

function shown(char: string): string {
  return JSON.stringify(char);
}

/** End offset of the string starting at `start` (a quote), or a problem inside it. */
function scanString(text: string, start: number): number | { offset: number; detail: string } {
  let i = start + 1;
  while (i < text.length) {
    const char = text[i];
    if (char === '"') return i + 1;
    if (char === "\\") {
      const next = text[i + 1];
      if (next === "u") {
        if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return { offset: i, detail: "invalid \\u escape (needs 4 hex digits)" };
        i += 6;
        continue;
      }
      if (next === undefined || !ESCAPES.has(next)) return { offset: i, detail: "invalid escape in string" };
      i += 2;
      continue;
    }
    if (text.charCodeAt(i) < 0x20) return { offset: i, detail: "unescaped control character in string" };
    i++;
  }
  return { offset: text.length, detail: "unterminated string" };
}

/** The first syntax error in `text`, or undefined when it is valid JSON. */
export function findJsonSyntaxError(text: string): JsonSyntaxProblem | undefined {
  const stack: Array<"array" | "object"> = [];
  let expect: Expect = "value";
  let i = 0;
  const problem = (offset: number, detail: string): JsonSyntaxProblem => ({ offset, ...position(text, offset), detail });
  const afterValue = (): Expect => (stack.length === 0 ? "end" : "comma-or-close");

  while (true) {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
    if (i >= text.length) return expect === "end" ? undefined : problem(i, "unexpected end of input");
    const char = text[i];
    switch (expect) {
      case "end":
        return problem(i, `unexpected ${shown(char)} after the end of the JSON value`);
      case "colon":
        if (char !== ":") return problem(i, `expected ':' after the property name, found ${shown(char)}`);
        i++;
        expect = "value";
        continue;
      case "comma-or-close": {
        const top = stack[stack.length - 1];
        const close = top === "array" ? "]" : "}";
        if (char === ",") {
          i++;
          expect = top === "array" ? "value" : "key";
          continue;
        }
        if (char === close) {
          i++;
          stack.pop();
          expect = afterValue();
          continue;
        }
        return problem(i, `expected ',' or '${close}', found ${shown(char)}`);
      }
      case "key":
      case "key-or-close": {
        if (char === "}" && expect === "key-or-close") {
          i++;
          stack.pop();
          expect = afterValue();
          continue;
        }
        if (char !== '"') return problem(i, `expected a property name in double quotes, found ${shown(char)}`);
        const end = scanString(text, i);
        if (typeof end !== "number") return problem(end.offset, end.detail);
        i = end;
        expect = "colon";
        continue;
      }
      case "value":
      case "value-or-close": {
        if (char === "]" && expect === "value-or-close") {
          i++;
          stack.pop();
          expect = afterValue();
          continue;
        }
        if (char === "[") {
          i++;
          stack.push("array");
          expect = "value-or-close";
          continue;
        }
        if (char === "{") {
          i++;
          stack.push("object");
          expect = "key-or-close";
          continue;
        }
        if (char === '"') {
          const end = scanString(text, i);
          if (typeof end !== "number") return problem(end.offset, end.detail);
          i = end;
          expect = afterValue();
          continue;
        }
        const literal = ["true", "false", "null"].find((word) => text.startsWith(word, i));
        if (literal) {
          i += literal.length;
          expect = afterValue();
          continue;
        }
        NUMBER.lastIndex = i;
        if ((char === "-" || (char >= "0" && char <= "9")) && NUMBER.exec(text)) {
          i = NUMBER.lastIndex;
          expect = afterValue();
          continue;
        }
        return problem(i, `expected a value, found ${shown(char)}`);
      }
    }
  }
}
