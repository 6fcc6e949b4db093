/**
 * The async-jobs plugins in-process: a Runtime with the memory KV store (or a given one),
 * a file object store in a temporary directory, and requests through `runtime.handle`.
 * The relay runs only when a test drives it (`relay()`), so every step is deterministic.
 */
import type { Clock } from "../../../core/clock.ts";
import type { PluginDefinition, ProcessRole } from "../../../core/plugins/types.ts";
import type { Runtime } from "../../../core/plugins/host.ts";
import type { Metrics } from "../../../core/metrics.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { ObjectStore } from "../../../core/stores/objects.ts";
import asyncJobs from "../../../plugins/async-jobs/index.ts";
import idempotency from "../../../plugins/idempotency/index.ts";
import relay from "../../../plugins/relay/index.ts";
import { startTestRuntime } from "../../support/runtime.ts";

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
  const events: JobsRuntime["events"] = [];
  const started = await startTestRuntime(yaml, [...(options.plugins ?? []), asyncJobs, idempotency, relay], {
    role: options.role,
    clock: options.clock,
    kv: options.kv,
    objects: options.objects ?? "files",
    probe(api) {
      for (const name of ["job.submitted", "job.terminal", "relay.processed"] as const) api.on(name, (payload) => events.push({ name, payload }));
    },
  });
  return {
    runtime: started.runtime,
    events,
    kv: started.kv,
    objects: started.objects,
    metrics: started.metrics,
    request: started.request,
    async relay() {
      await started.runtime.runTaskNow("relay");
      // Jobs run in the background of the poll: wait until none is running.
      await started.api.use("relay").idle();
    },
    close: started.close,
  };
}

/** A multipart submission body; `fileFirst` puts the file part before the fields. */
export function jobForm(
  fields: Record<string, string>,
  file?: { name: string; content: string | Uint8Array<ArrayBuffer>; type?: string },
  fileFirst = false,
): FormData {
  const form = new FormData();
  const addFile = () => {
    if (file) form.append("file", new Blob([file.content], { type: file.type ?? "application/octet-stream" }), file.name);
  };
  if (fileFirst) addFile();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  if (!fileFirst) addFile();
  return form;
}
