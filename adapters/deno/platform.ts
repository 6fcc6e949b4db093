/** The Deno primitives the shared boot code needs. */
import { lookup } from "node:dns/promises";
import { availableParallelism } from "node:os";
import type { Platform } from "../boot.ts";
import { readPackageAsset } from "../package-asset.ts";
import { fetchPinned } from "../pinned-fetch.ts";
import { denoWorkersUnsupported } from "./workers.ts";

function resolvePath(path: string, baseDir: string): string {
  if (path.startsWith("/")) return path;
  const base = baseDir.startsWith("/") ? baseDir : `${Deno.cwd()}/${baseDir}`;
  return new URL(path, `file://${base}/`).pathname;
}

export const denoPlatform: Platform = {
  env: Deno.env.toObject(),
  exists(path) {
    try {
      Deno.statSync(path);
      return true;
    } catch {
      return false;
    }
  },
  readTextFile: (path) => Deno.readTextFile(path),
  importModule: (path, baseDir) => import(`file://${resolvePath(path, baseDir)}`),
  dirname: (path) => (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) || "/" : "."),
  writeError: (text) => {
    Deno.stderr.writeSync(new TextEncoder().encode(text));
  },
  exit: (code) => Deno.exit(code),
  // Deno.resolveDns skips /etc/hosts; the node:dns compatibility layer uses the system resolver.
  lookupHost: async (hostname) => (await lookup(hostname, { all: true })).map((entry) => entry.address),
  fetchPinned,
  readAsset: readPackageAsset,
  availableParallelism,
  workersUnsupported: denoWorkersUnsupported,
  onSignals(signals, handler) {
    for (const signal of signals) Deno.addSignalListener(signal as Deno.Signal, () => handler(signal));
  },
  processes: {
    // Read anew on each access.
    parentPid: () => Deno.ppid,
    readProcFile(path) {
      try {
        return Deno.readTextFileSync(path);
      } catch {
        return undefined;
      }
    },
  },
};
