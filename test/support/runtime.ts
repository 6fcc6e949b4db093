/**
 * A gateway runtime in-process, for tests that drive plugins without a gateway process: the
 * config from YAML (validated with the sections of the plugins installed, as a start does),
 * the memory KV store on the test's clock, requests through `runtime.handle`, and a probe
 * plugin that hands the test a `PluginApi` (services, events). Every in-process harness
 * builds its runtime here, so a change to how a runtime is assembled is made once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryKv } from "../../adapters/kv-memory/index.ts";
import { FsObjectStore } from "../../adapters/objects-fs/index.ts";
import { type Clock, randomIds, systemClock } from "../../core/clock.ts";
import type { Env } from "../../core/config/env.ts";
import type { GatewayConfig } from "../../core/config/schema.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import { Metrics } from "../../core/metrics.ts";
import { Runtime, type RuntimeDeps } from "../../core/plugins/host.ts";
import { definePlugin, type PluginApi, type PluginDefinition, type ProcessRole } from "../../core/plugins/types.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import type { ObjectStore } from "../../core/stores/objects.ts";
import { loadConfig } from "../../plugins/config.ts";
import { slotChecked } from "./slot-checked-kv.ts";
import { builtinPlugins } from "../../plugins/index.ts";
import { asyncWorkScope } from "../../adapters/work-scope.ts";

const notUsed = (): never => {
  throw new Error('this test runtime has no object store (pass objects: "files")');
};
/** The object store of a runtime whose plugins never touch one: any use fails the test. */
export const unusedObjects: ObjectStore = { kind: "unused", put: notUsed, get: notUsed, delete: notUsed, list: notUsed, ping: notUsed, close: notUsed };

export interface TestRuntimeOptions {
  role?: ProcessRole;
  /** Default: the system clock. The memory store runs on this clock. */
  clock?: Clock;
  /** A store of the test's own (left open on close), or a wrapper around the memory store (fault injection). */
  kv?: KvStore | ((memory: MemoryKv) => KvStore);
  /** Default: none (any use fails). "files": a file store in a temp dir, removed on close; a function wraps that file store. */
  objects?: ObjectStore | "files" | ((files: FsObjectStore) => ObjectStore);
  log?: Logger;
  /** The backends' HTTP client. Default: the runtime's own fetch. */
  fetch?: typeof fetch;
  fetchPinned?: RuntimeDeps["fetchPinned"];
  /** Default: every name resolves to 127.0.0.1. */
  lookupHost?: RuntimeDeps["lookupHost"];
  env?: Env;
  /** The services the probe plugin uses, so it is set up after the plugins providing them. */
  probeDependsOn?: readonly string[];
  /** Runs in the probe's setup: subscribe to events there (`api.on`). */
  probe?: (api: PluginApi) => void;
}

export interface TestRuntime {
  runtime: Runtime;
  config: GatewayConfig;
  kv: KvStore;
  /** The memory store under `kv` (which checks every multi-key call's hash slots); undefined when the test gave its own store. */
  memory?: MemoryKv;
  objects: ObjectStore;
  clock: Clock;
  metrics: Metrics;
  /** The probe plugin's API: `api.use("jobs")`, `api.emit(...)`. */
  api: PluginApi;
  request(path: string, init?: RequestInit): Promise<Response>;
  /** Closes the runtime, the memory store it opened and its temp dir. */
  close(): Promise<void>;
}

/** Starts a runtime with `plugins` (and the probe, installed last) on `yaml`. */
export async function startTestRuntime(yaml: string, plugins: readonly PluginDefinition[], options: TestRuntimeOptions = {}): Promise<TestRuntime> {
  // The built-in plugins' sections are part of loadConfig already; a test's own plugins add theirs.
  const sections = plugins.flatMap((plugin) => (plugin.section && !builtinPlugins.includes(plugin) ? [plugin.section] : []));
  const { config, extra } = loadConfig(yaml, options.env ?? {}, sections);
  const clock = options.clock ?? systemClock;
  const memory = typeof options.kv === "object" ? undefined : new MemoryKv(clock);
  // Every multi-key call must be one a Redis Cluster accepts (support/slot-checked-kv.ts).
  const kv = typeof options.kv === "object" ? options.kv : slotChecked(options.kv && memory ? options.kv(memory) : (memory as MemoryKv));
  const dir = options.objects === undefined || typeof options.objects === "object" ? undefined : mkdtempSync(join(tmpdir(), "gw-test-"));
  const objects = typeof options.objects === "object"
    ? options.objects
    : dir === undefined
    ? unusedObjects
    : typeof options.objects === "function"
    ? options.objects(new FsObjectStore({ dir }))
    : new FsObjectStore({ dir });
  const metrics = new Metrics();
  const runtime = new Runtime(config, extra, {
    role: options.role ?? "gateway",
    kv,
    objects,
    clock,
    ids: randomIds,
    log: options.log ?? silentLogger,
    metrics,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    fetchPinned: options.fetchPinned,
    lookupHost: options.lookupHost ?? (async () => ["127.0.0.1"]),
    workScope: asyncWorkScope(),
  });
  const close = async () => {
    await runtime.close();
    await memory?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  };
  let probe: PluginApi | undefined;
  const probePlugin = definePlugin({
    name: "test-probe",
    roles: ["gateway", "relay"],
    dependsOn: [...(options.probeDependsOn ?? [])],
    // The probe may use any installed plugin's services (set up after them all).
    optionalDependsOn: plugins.map((plugin) => plugin.name),
    setup(api) {
      probe = api;
      options.probe?.(api);
    },
  });
  try {
    await runtime.install([...plugins, probePlugin]);
    if (!probe) throw new Error("the test probe plugin was not set up");
  } catch (error) {
    await close();
    throw error;
  }
  return {
    runtime,
    config,
    kv,
    memory,
    objects,
    clock,
    metrics,
    api: probe,
    request: (path, init) => runtime.handle(new Request(`http://gateway${path}`, init)),
    close,
  };
}
