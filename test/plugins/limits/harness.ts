/**
 * The limits and usage plugins in-process, next to the modes they hook into (async jobs
 * with the relay, the sync proxy): a Runtime on the memory KV store (or a given one), a
 * file object store in a temporary directory, and a fake backend behind the injected
 * fetch whose every call waits until the test answers it. The relay runs only when a
 * test drives it, so every step is deterministic; time is a manual clock.
 */
import { ManualClock } from "../../../core/clock.ts";
import type { Metrics } from "../../../core/metrics.ts";
import type { Runtime } from "../../../core/plugins/host.ts";
import type { PluginDefinition } from "../../../core/plugins/types.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import asyncJobs from "../../../plugins/async-jobs/index.ts";
import idempotency from "../../../plugins/idempotency/index.ts";
import limits from "../../../plugins/limits/index.ts";
import relay from "../../../plugins/relay/index.ts";
import syncProxy from "../../../plugins/sync-proxy/index.ts";
import usage from "../../../plugins/usage/index.ts";
import { startTestRuntime } from "../../support/runtime.ts";

export interface HeldCall {
  url: string;
  answered: boolean;
  answer(response?: Response): void;
  /** The caller gave up (its signal aborted) before the call was answered. */
  aborted: boolean;
}

/** A backend whose calls wait until the test answers them. */
export class HeldBackend {
  readonly calls: HeldCall[] = [];
  /** Calls not answered yet. */
  get waiting(): HeldCall[] {
    return this.calls.filter((call) => !call.answered && !call.aborted);
  }

  readonly fetch: typeof fetch = (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = input instanceof Request ? input.url : String(input);
      const call: HeldCall = {
        url,
        aborted: false,
        answered: false,
        answer(response?: Response) {
          call.answered = true;
          resolve(response ?? Response.json({ ok: true }));
        },
      };
      init?.signal?.addEventListener("abort", () => {
        call.aborted = true;
        reject(init.signal?.reason ?? new Error("aborted"));
      });
      this.calls.push(call);
    });

  answerAll(): void {
    for (const call of this.waiting) call.answer();
  }
}

export interface LimitsRuntime {
  runtime: Runtime;
  kv: KvStore;
  metrics: Metrics;
  clock: ManualClock;
  backend: HeldBackend;
  request(path: string, init?: RequestInit): Promise<Response>;
  /** Starts one relay round in the background (its backend calls wait in `backend`). */
  relayRound(): Promise<void>;
  /** Resolves when the relay has no job running. */
  relayIdle(): Promise<void>;
  close(): Promise<void>;
}

export async function limitsRuntime(yaml: string, options: { kv?: KvStore; plugins?: readonly PluginDefinition[] } = {}): Promise<LimitsRuntime> {
  const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
  const backend = new HeldBackend();
  const plugins = [asyncJobs, idempotency, relay, limits, usage, syncProxy, ...(options.plugins ?? [])];
  const started = await startTestRuntime(yaml, plugins, { clock, kv: options.kv, objects: "files", fetch: backend.fetch });
  return {
    runtime: started.runtime,
    kv: started.kv,
    metrics: started.metrics,
    clock,
    backend,
    request: started.request,
    relayRound: () => started.runtime.runTaskNow("relay"),
    relayIdle: async () => await started.api.use("relay").idle(),
    async close() {
      backend.answerAll();
      await started.close();
    },
  };
}

/** Polls `check` until true, or fails at the deadline (no sleeps: a short poll). */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A multipart job submission. */
export function jobForm(content = "input", name = "audio.wav"): FormData {
  const form = new FormData();
  form.append("file", new Blob([content], { type: "audio/wav" }), name);
  return form;
}

/** The value of one Prometheus sample, 0 when absent. */
export async function sample(metrics: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as Array<{ labels: Record<string, string | number>; value: number }>;
  const match = values.find((v) => Object.entries(labels).every(([key, value]) => String(v.labels[key]) === value));
  return match?.value ?? 0;
}
