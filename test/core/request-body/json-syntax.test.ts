import { describe, expect, it } from "vitest";
import { findJsonSyntaxError } from "../../../core/request-body/json-syntax.ts";

describe("findJsonSyntaxError", () => {
  it("finds nothing wrong where JSON.parse succeeds", () => {
    const valid = ['{"a":1}', ' [1, -2.5e3, true, false, null, "x\\u00e9\\n"] ', '{"nested":{"list":[{},[]]}}', "0", '""', "\n{\r\n}\t"];
    for (const text of valid) {
      expect(() => JSON.parse(text)).not.toThrow();
      expect(findJsonSyntaxError(text), text).toBeUndefined();
    }
  });

  it("points at the first offending character, with line and column", () => {
    const cases: Array<[string, { offset: number; line: number; column: number; detail: string }]> = [
      ['{"model":"m",}', { offset: 13, line: 1, column: 14, detail: 'expected a property name in double quotes, found "}"' }],
      ['{\n  "a": [1, 2,,]\n}', { offset: 15, line: 2, column: 14, detail: 'expected a value, found ","' }],
      ['{"a" 1}', { offset: 5, line: 1, column: 6, detail: "expected ':' after the property name, found \"1\"" }],
      ['{"a":1', { offset: 6, line: 1, column: 7, detail: "unexpected end of input" }],
      ['{"a":"x', { offset: 7, line: 1, column: 8, detail: "unterminated string" }],
      ['{"a":"\\q"}', { offset: 6, line: 1, column: 7, detail: "invalid escape in string" }],
      ["{'a':1}", { offset: 1, line: 1, column: 2, detail: 'expected a property name in double quotes, found "\'"' }],
      ['{"a":1} x', { offset: 8, line: 1, column: 9, detail: 'unexpected "x" after the end of the JSON value' }],
      ["[01]", { offset: 2, line: 1, column: 3, detail: "expected ',' or ']', found \"1\"" }],
      ["", { offset: 0, line: 1, column: 1, detail: "unexpected end of input" }],
    ];
    for (const [text, expected] of cases) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(findJsonSyntaxError(text), text).toEqual(expected);
    }
  });

  it("survives deep nesting without a stack overflow", () => {
    const deep = `${"[".repeat(200_000)}1${"]".repeat(199_999)}`;
    expect(findJsonSyntaxError(deep)).toMatchObject({ offset: deep.length, detail: "unexpected end of input" });
  });
});
