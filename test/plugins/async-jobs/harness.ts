/**
 * The async-jobs plugins in-process: a Runtime with the memory KV store (or a given one),
 * a file object store in a temporary directory, and requests through `runtime.handle`.
 * The relay runs only when a test drives it (`relay()`), so every step is deterministic.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { FsObjectStore } from "../../../adapters/objects-fs/index.ts";
import { randomIds, systemClock, type Clock } from "../../../core/clock.ts";
import { loadConfig } from "../../../plugins/config.ts";
import { silentLogger } from "../../../core/log.ts";
import { Metrics } from "../../../core/metrics.ts";
import { Runtime } from "../../../core/plugins/host.ts";
import { definePlugin, type PluginApi, type PluginDefinition, type ProcessRole } from "../../../core/plugins/types.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { ObjectStore } from "../../../core/stores/objects.ts";
import asyncJobs from "../../../plugins/async-jobs/index.ts";
import idempotency from "../../../plugins/idempotency/index.ts";
import relay from "../../../plugins/relay/index.ts";

export interface JobsRuntime {
  runtime: Runtime;
  /** The job events emitted so far, in order. */
  events: Array<{ name: "job.submitted" | "job.terminal" | "relay.processed"; payload: unknown }>;
  kv: KvStore;
  objects: ObjectStore;
  metrics: Metrics;
  request(path: string, init?: RequestInit): Promise<Response>;
  /** One relay polling round, then waits until the jobs it started have finished. */
  relay(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  kv?: KvStore;
  objects?: ObjectStore;
  clock?: Clock;
  role?: ProcessRole;
  /** Plugins set up before the async-jobs ones (visibility, for example). */
  plugins?: readonly PluginDefinition[];
}

export async function jobsRuntime(yaml: string, options: HarnessOptions = {}): Promise<JobsRuntime> {
  const { config, extra } = loadConfig(yaml, {});
  const dir = mkdtempSync(join(tmpdir(), "gw-jobs-"));
  const kv = options.kv ?? new MemoryKv(options.clock);
  const objects = options.objects ?? new FsObjectStore({ dir });
  const metrics = new Metrics();
  const runtime = new Runtime(config, extra, {
    role: options.role ?? "gateway",
    kv,
    objects,
    clock: options.clock ?? systemClock,
    ids: randomIds,
    log: silentLogger,
    metrics,
    fetch: (input, init) => globalThis.fetch(input, init),
    lookupHost: async () => ["127.0.0.1"],
  });
  // A probe plugin keeps a PluginApi so the test can reach the relay service.
  let probe: PluginApi | undefined;
  const events: JobsRuntime["events"] = [];
  const probePlugin = definePlugin({
    name: "test-probe",
    roles: ["gateway", "relay"],
    optionalDependsOn: ["relay"],
    setup(api) {
      probe = api;
      for (const name of ["job.submitted", "job.terminal", "relay.processed"] as const) api.on(name, (payload) => events.push({ name, payload }));
    },
  });
  await runtime.install([...(options.plugins ?? []), asyncJobs, idempotency, relay, probePlugin]);
  return {
    runtime,
    events,
    kv,
    objects,
    metrics,
    request: (path, init) => runtime.handle(new Request(`http://gateway${path}`, init)),
    async relay() {
      await runtime.runTaskNow("relay");
      // Jobs run in the background of the poll: wait until none is running.
      await probe?.use("relay").idle();
    },
    async close() {
      await runtime.close();
      if (!options.kv) await kv.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A multipart submission body; `fileFirst` puts the file part before the fields. */
export function jobForm(fields: Record<string, string>, file?: { name: string; content: string | Uint8Array<ArrayBuffer>; type?: string }, fileFirst = false): FormData {
  const form = new FormData();
  const addFile = () => {
    if (file) form.append("file", new Blob([file.content], { type: file.type ?? "application/octet-stream" }), file.name);
  };
  if (fileFirst) addFile();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (!fileFirst) addFile();
  return form;
}
