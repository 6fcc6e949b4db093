/**
 * The GC in-process: a Runtime with async-jobs, the embedded relay and the GC on the memory
 * KV store (on a manual clock, so leases and ages pass on demand) and a file object store
 * in a temporary directory. Nothing runs on timers: a test drives the relay (`relay()`)
 * and the GC (`gc()`) itself. A probe plugin gives the test the `jobs` service and records
 * every `job.terminal` event.
 */
import type { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import type { FsObjectStore } from "../../../adapters/objects-fs/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import type { Logger } from "../../../core/log.ts";
import type { Metrics } from "../../../core/metrics.ts";
import type { Runtime } from "../../../core/plugins/host.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { ObjectStore } from "../../../core/stores/objects.ts";
import asyncJobs from "../../../plugins/async-jobs/index.ts";
import type { JobRecord, JobStore } from "../../../core/jobs/types.ts";
import gc from "../../../plugins/gc/index.ts";
import relay from "../../../plugins/relay/index.ts";
import { startTestRuntime } from "../../support/runtime.ts";
import { jobForm } from "../async-jobs/harness.ts";

export interface GcRuntime {
  runtime: Runtime;
  clock: ManualClock;
  kv: KvStore;
  objects: ObjectStore;
  metrics: Metrics;
  jobs: JobStore;
  /** `job.terminal` events, in order. */
  terminal: JobRecord[];
  /** `job.expiry` events, in order. */
  expiry: Array<{ job: JobRecord; expiresAt: number }>;
  /** Submits a job to `POST /jobs/<type>`; resolves with its id. */
  submit(type: string, content?: string): Promise<string>;
  /** One relay polling round, then waits until the jobs it started have finished. */
  relay(): Promise<void>;
  /** One GC tick. */
  gc(): Promise<void>;
  /** A metric sample's value (0 when absent). */
  metric(name: string, labels: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

export interface GcHarnessOptions {
  /** Wraps the memory KV store (fault injection, call recording). */
  kv?: (kv: MemoryKv) => KvStore;
  objects?: (objects: FsObjectStore) => ObjectStore;
  log?: Logger;
}

export async function gcRuntime(yaml: string, options: GcHarnessOptions = {}): Promise<GcRuntime> {
  // Real time at the start: file modification times (object ages) are real.
  const clock = new ManualClock(Date.now());
  const terminal: JobRecord[] = [];
  const expiry: Array<{ job: JobRecord; expiresAt: number }> = [];
  const started = await startTestRuntime(yaml, [asyncJobs, relay, gc], {
    clock,
    kv: options.kv,
    objects: options.objects ?? "files",
    log: options.log,
    probeDependsOn: ["async-jobs"],
    probe: (api) => {
      api.on("job.terminal", ({ job }) => terminal.push(job));
      api.on("job.expiry", (event) => expiry.push(event));
    },
  });
  const { runtime, api, metrics } = started;
  return {
    runtime,
    clock,
    kv: started.kv,
    objects: started.objects,
    metrics,
    jobs: api.use("jobs"),
    terminal,
    expiry,
    async submit(type, content = "input bytes") {
      const response = await runtime.handle(
        new Request(`http://gateway/jobs/${type}`, { method: "POST", body: jobForm({}, { name: "clip.wav", content }) }),
      );
      if (response.status !== 202) throw new Error(`submission answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { job_id: string }).job_id;
    },
    async relay() {
      await runtime.runTaskNow("relay");
      await api.use("relay").idle();
    },
    gc: () => runtime.runTaskNow("gc"),
    async metric(name, labels) {
      const metric = metrics.registry.getSingleMetric(name);
      if (!metric) return 0;
      const { values } = await metric.get();
      const wanted = Object.entries(labels);
      const found = values.find((v) => wanted.every(([key, value]) => v.labels[key] === value) && Object.keys(v.labels).length === wanted.length);
      return found?.value ?? 0;
    },
    close: started.close,
  };
}

/** Reads an object's text, or null when it does not exist. */
export async function readObject(objects: ObjectStore, key: string): Promise<string | null> {
  const stored = await objects.get(key);
  return stored ? await new Response(stored.body).text() : null;
}
