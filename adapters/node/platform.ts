/** The Node primitives the shared boot code needs. */
import { lookup } from "node:dns/promises";
import { availableParallelism } from "node:os";
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Platform } from "../boot.ts";
import { readPackageAsset } from "../package-asset.ts";
import { fetchPinned } from "../pinned-fetch.ts";
import { createNodeFetch } from "./http-client.ts";
import { commonJsTypeScriptProblem } from "./module-format.ts";

let tsxRegistered: Promise<unknown> | undefined;

/**
 * Node 20 cannot strip types: user plugins written in TypeScript load through tsx, registered
 * once for the process (not tsx's per-call namespace), so a plugin importing
 * "inference-gateway/plugin" shares the gateway's modules: its `PluginError` and
 * `GatewayError` are the gateway's own classes. Imports are cached, as on Deno.
 */
function typeScriptLoader(): Promise<unknown> {
  tsxRegistered ??= import("tsx/esm/api").then(({ register }) => register(), (error: { code?: string }) => {
    // tsx is an optional peer dependency: only installs that load .ts plugins need it.
    if (error.code !== "ERR_MODULE_NOT_FOUND") throw error;
    throw new Error(
      'loading a TypeScript plugin on Node needs tsx, which is not installed: run "npm install tsx" next to the gateway, or compile the plugin to .js (or .mjs)',
    );
  });
  return tsxRegistered;
}

export const nodePlatform: Platform = {
  env: process.env,
  exists: (path) => existsSync(path),
  readTextFile: (path) => readFile(path, "utf8"),
  async importModule(path, baseDir) {
    const file = isAbsolute(path) ? path : resolve(baseDir, path);
    if (/\.(m|c)?tsx?$/.test(file)) {
      const problem = commonJsTypeScriptProblem(file);
      if (problem) throw new Error(problem);
      await typeScriptLoader();
    }
    return await import(pathToFileURL(file).href);
  },
  dirname,
  writeError: (text) => process.stderr.write(text),
  exit: (code) => process.exit(code),
  lookupHost: async (hostname) => (await lookup(hostname, { all: true })).map((entry) => entry.address),
  fetchPinned,
  readAsset: readPackageAsset,
  // Node 20's global fetch costs about 3x node:http per backend call (see http-client.ts).
  fetch: createNodeFetch(),
  availableParallelism,
  onSignals(signals, handler) {
    for (const signal of signals) process.on(signal, () => handler(signal));
  },
  processes: {
    // Read anew on each access.
    parentPid: () => process.ppid,
    readProcFile(path) {
      try {
        return readFileSync(path, "utf8");
      } catch {
        return undefined;
      }
    },
  },
};
