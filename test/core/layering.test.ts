/**
 * The layers of docs/design.md#layout, checked on the source: a plugin imports `core/` and nothing
 * from another plugin's folder (type-only imports and `declare module` included: a shared type
 * is a contract, and contracts live in `core/`); `core/` imports no plugin, no adapter, no
 * runtime module (`node:*` or a bare Node builtin) and names neither `Deno` nor `process`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(new URL(import.meta.url).pathname), "../..");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.(m|c)?tsx?$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Every module specifier a file names: static and dynamic imports, re-exports, `declare module`. */
function specifiers(source: string): string[] {
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^"'`;]*?\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["']([^"']+)["']\s*\)/g,
    /\bdeclare\s+module\s+["']([^"']+)["']/g,
  ];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1]));
}

/** The source without comments, so a comment that mentions `Deno` or `process.env` is no finding. */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
}

/** A path relative to the project root with "/" separators ("plugins/gc/index.ts"). */
function projectPath(path: string): string {
  return relative(root, path).split(sep).join("/");
}

/** Where a relative specifier points, as a project path; undefined for a package. */
function target(file: string, specifier: string): string | undefined {
  return specifier.startsWith(".") ? projectPath(resolve(dirname(file), specifier)) : undefined;
}

const nodeBuiltins = new Set(builtinModules);

describe("layering (docs/design.md#layout)", () => {
  it("a plugin imports nothing from another plugin's folder", () => {
    const findings: string[] = [];
    for (const file of sourceFiles(join(root, "plugins"))) {
      const own = projectPath(file).split("/");
      // plugins/index.ts is the list of built-in plugins, not a plugin.
      if (own.length < 3) continue;
      for (const specifier of specifiers(readFileSync(file, "utf8"))) {
        const to = target(file, specifier)?.split("/");
        if (to && to[0] === "plugins" && to[1] !== own[1]) findings.push(`${projectPath(file)} imports "${specifier}"`);
      }
    }
    expect(findings).toEqual([]);
  });

  it("core/ imports no plugin, no adapter and no runtime module, and names neither Deno nor process", () => {
    const findings: string[] = [];
    for (const file of sourceFiles(join(root, "core"))) {
      const source = readFileSync(file, "utf8");
      for (const specifier of specifiers(source)) {
        const to = target(file, specifier);
        if (to && !to.startsWith("core/")) findings.push(`${projectPath(file)} imports "${specifier}" (outside core/)`);
        if (specifier.startsWith("node:") || nodeBuiltins.has(specifier)) findings.push(`${projectPath(file)} imports the runtime module "${specifier}"`);
      }
      const code = withoutComments(source);
      for (const global of ["Deno", "process"]) {
        if (new RegExp(`\\b${global}\\s*[.[]`).test(code)) findings.push(`${projectPath(file)} uses ${global}`);
      }
    }
    expect(findings).toEqual([]);
  });

  it("the checks see what they look for", () => {
    // Guards the regular expressions above: each form of import is found.
    const source = [
      'import { a } from "../x/a.ts";',
      'import type { B } from "../y/b.ts";',
      'export { c } from "../z/c.ts";',
      'import "../w/side.ts";',
      'const m = await import("../v/lazy.ts");',
      'declare module "../u/types.ts" {}',
      'import {\n  d,\n  type E,\n} from "../t/multi.ts";',
    ].join("\n");
    expect(specifiers(source).sort()).toEqual(["../t/multi.ts", "../u/types.ts", "../v/lazy.ts", "../w/side.ts", "../x/a.ts", "../y/b.ts", "../z/c.ts"]);
    expect(withoutComments('// Deno.env\nconst url = "http://x"; /* process.env */')).toBe('\nconst url = "http://x"; ');
  });
});
