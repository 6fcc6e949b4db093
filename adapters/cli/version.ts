/**
 * The gateway's version: its package.json's. The file sits two folders above this module in
 * the source (adapters/cli/) and three in the build (dist/adapters/cli/), so it is looked up
 * upwards by name. `node:fs` and `node:url` behave the same on Node and Deno.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export function gatewayVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url));; dir = dirname(dir)) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate)) {
      const manifest = JSON.parse(readFileSync(candidate, "utf8")) as { name?: unknown; version?: unknown };
      if (manifest.name === "inference-gateway" && typeof manifest.version === "string") return manifest.version;
    }
    if (dirname(dir) === dir) return "unknown";
  }
}
