/**
 * Why a user plugin written in TypeScript would not load as an ES module on Node. Node (and
 * tsx, which follows its rules) runs a `.ts` file as CommonJS unless the nearest package.json
 * says `"type": "module"`, and a `.cts` file always; the plugin's `export default` then
 * arrives wrapped, and the gateway could only say "must export default definePlugin(...)".
 * Deno runs every `.ts` file as an ES module, so this is Node's check only.
 */
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** The nearest package.json above `file` (Node's lookup), or undefined when there is none. */
function nearestPackageJson(file: string): string | undefined {
  for (let dir = dirname(file);; dir = dirname(dir)) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

function declaresModule(packageJson: string): boolean {
  try {
    return (JSON.parse(readFileSync(packageJson, "utf8")) as { type?: unknown }).type === "module";
  } catch {
    return false;
  }
}

/** What to change so the TypeScript file at `file` (absolute) loads as an ES module; undefined when it does. */
export function commonJsTypeScriptProblem(file: string): string | undefined {
  const name = basename(file);
  if (/\.cts$/.test(name)) {
    return `Node loads a .cts file as CommonJS, and a plugin must be an ES module: rename it to ${name.replace(/\.cts$/, ".mts")}`;
  }
  if (!/\.tsx?$/.test(name)) return undefined;
  const packageJson = nearestPackageJson(file);
  if (packageJson && declaresModule(packageJson)) return undefined;
  const why = packageJson ? `the nearest package.json (${packageJson}) has no "type": "module"` : 'no package.json above it says "type": "module"';
  return (
    `Node would load it as CommonJS (${why}), and a plugin must be an ES module: ` +
    `add "type": "module" to ${packageJson ?? `a package.json next to it (${join(dirname(file), "package.json")})`}, or rename it to ${
      name.replace(/\.tsx?$/, ".mts")
    }`
  );
}
