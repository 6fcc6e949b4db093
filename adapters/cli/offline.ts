/**
 * A gateway built from a config file without serving or connecting to anything: what
 * `inference-gateway check` and a primary of several workers (adapters/workers/plan.ts) check.
 */
import { systemClock } from "../../core/clock.ts";
import { Gateway } from "../../core/gateway.ts";
import type { Logger } from "../../core/log.ts";
import { builtinPlugins } from "../../plugins/index.ts";
import type { Platform } from "../boot.ts";
import { MemoryKv } from "../kv-memory/index.ts";
import { FsObjectStore } from "../objects-fs/index.ts";

/**
 * The gateway a start would build from the file at `path` (the same validation, plugin loading
 * and setups), on stand-in stores that open nothing, its tasks not started. Throws what the
 * start would (a `ConfigError` for the file). Close it once read.
 */
export function createOffline(platform: Platform, path: string, log: Logger): Promise<Gateway> {
  return Gateway.create({
    role: "gateway",
    readConfig: () => platform.readTextFile(path),
    env: platform.env,
    importModule: (specifier) => platform.importModule(specifier, platform.dirname(path)),
    // Stand-ins: constructing them touches no disk and no network.
    openStores: async (config) => ({ kv: new MemoryKv(systemClock), objects: new FsObjectStore({ dir: config.object_store.dir }) }),
    lookupHost: platform.lookupHost,
    fetchPinned: platform.fetchPinned,
    readAsset: platform.readAsset,
    plugins: builtinPlugins,
    log,
    deferStart: true,
  });
}
