/**
 * `npm run test:unit`: the edit loop, in seconds. The core's and the plugins' tests that run
 * in this process alone: no gateway process, no redis-server or s3rver (so no global setup).
 * Which files those are is read from the files themselves, so a new test needs no list
 * entry: a file that uses the suite's stores (`inject(...)`, the shared store helpers) or
 * starts a process is left to `npm test`, which runs everything.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

const NEEDS_THE_SUITE = /\binject\(|support\/(ops-stores|stores-yaml)\.ts|\bstartGateway\(|node:child_process/;

function unitTests(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".test.ts"))
    .map((file) => join(dir, file))
    .filter((file) => !NEEDS_THE_SUITE.test(readFileSync(file, "utf8")));
}

export default defineConfig({
  test: {
    ...base.test,
    include: [...unitTests("test/core"), ...unitTests("test/plugins")],
    globalSetup: [],
  },
});
