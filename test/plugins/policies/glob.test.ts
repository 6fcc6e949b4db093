import { describe, expect, it } from "vitest";
import { anyGlob, compileGlob, GlobError } from "../../../core/glob.ts";

const matches = (pattern: string, value: string) => compileGlob(pattern)(value);

describe("globs on model aliases and service types", () => {
  it("* matches everything, the empty alias and slashes included", () => {
    for (const value of ["", "gpt-4o", "meta/llama-3", "a b"]) expect(matches("*", value)).toBe(true);
  });

  it("a literal matches only itself, case-sensitively", () => {
    expect(matches("gpt-4o", "gpt-4o")).toBe(true);
    expect(matches("gpt-4o", "GPT-4o")).toBe(false);
    expect(matches("gpt-4o", "gpt-4o-mini")).toBe(false);
    expect(matches("gpt.4o", "gpt-4o")).toBe(false);
  });

  it("* is any run of characters at any position", () => {
    expect(matches("gpt-*", "gpt-4o")).toBe(true);
    expect(matches("gpt-*", "gpt-")).toBe(true);
    expect(matches("gpt-*", "xgpt-4o")).toBe(false);
    expect(matches("*-mini", "gpt-4o-mini")).toBe(true);
    expect(matches("*llama*", "meta/llama-3")).toBe(true);
    expect(matches("a*b*c", "axxbyyc")).toBe(true);
    expect(matches("a*b*c", "axxbyy")).toBe(false);
  });

  it("? is exactly one character (a code point, not half a surrogate pair)", () => {
    expect(matches("gpt-?o", "gpt-4o")).toBe(true);
    expect(matches("gpt-?o", "gpt-o")).toBe(false);
    expect(matches("gpt-?o", "gpt-45o")).toBe(false);
    expect(matches("m?", "m😀")).toBe(true);
  });

  it("[...] is a class, with ranges and ! or ^ negation", () => {
    expect(matches("v[12]", "v1")).toBe(true);
    expect(matches("v[12]", "v3")).toBe(false);
    expect(matches("v[0-9]", "v7")).toBe(true);
    expect(matches("v[!0-9]", "v7")).toBe(false);
    expect(matches("v[!0-9]", "vx")).toBe(true);
    expect(matches("v[^0-9]", "vx")).toBe(true);
    expect(matches("v[-a]", "v-")).toBe(true);
    expect(matches("v[a-]", "v-")).toBe(true);
    expect(matches("v[]]", "v]")).toBe(true);
  });

  it("regex syntax in a pattern is literal", () => {
    expect(matches("a.b", "a.b")).toBe(true);
    expect(matches("a.*", "a.b")).toBe(true);
    expect(matches("a.*", "ab")).toBe(false);
    expect(matches("(x)+|y$", "(x)+|y$")).toBe(true);
    expect(matches("v[1", "v[1")).toBe(true);
    expect(matches("a\\b*", "a\\bc")).toBe(true);
  });

  it("refuses a class the regex engine cannot build, naming the pattern", () => {
    expect(() => compileGlob("v[z-a]")).toThrow(GlobError);
    expect(() => compileGlob("v[z-a]")).toThrow('invalid glob "v[z-a]"');
  });

  it("anyGlob matches when one pattern does, and an empty list never", () => {
    expect(anyGlob(["a*", "b"])("abc")).toBe(true);
    expect(anyGlob(["a*", "b"])("b")).toBe(true);
    expect(anyGlob(["a*", "b"])("c")).toBe(false);
    expect(anyGlob([])("anything")).toBe(false);
    expect(anyGlob([])("")).toBe(false);
  });
});
