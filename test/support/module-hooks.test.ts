/**
 * A module the tests share (test/support, a folder's harness) registers no `afterEach` /
 * `afterAll` / `beforeEach` / `beforeAll` when it is imported: a worker imports it once for
 * all the files it runs (`isolate: false` in vitest.config.ts), so such a hook would belong to
 * the first file only and the later files' cleanup would silently not happen (the admin
 * harness left gateways, and the tracing SDK with them, open that way). Export a function the
 * test file registers itself instead. Setup files (`setupFiles`) run per file and may.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const SETUP_FILES = new Set(["support/stop-leftovers.ts"]);

function sharedModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "fixtures" ? [] : sharedModules(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [path] : [];
  });
}

it("no shared test module registers a hook on import", () => {
  const offenders = sharedModules(root)
    .map((path) => relative(root, path).replaceAll("\\", "/"))
    .filter((path) => !SETUP_FILES.has(path) && /^(afterEach|afterAll|beforeEach|beforeAll)\(/m.test(readFileSync(join(root, path), "utf8")));
  expect(offenders).toEqual([]);
});
