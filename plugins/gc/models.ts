/**
 * The models whose queues the GC visits: every model of the current config, plus every
 * model that still has a `relay:` list in the store, so the queues of a model removed
 * from the config are still reaped and swept.
 */
import type { KvStore } from "../../core/stores/kv.ts";
import type { JobStore } from "../../core/jobs/types.ts";
import { BATCH, checkStopped } from "./context.ts";

/**
 * The queue key layout, taken from the job store's own key functions (an empty model
 * leaves the prefix and the suffixes), so the GC never spells a key itself.
 */
function queueLayout(jobs: JobStore): { prefix: string; suffixes: string[] } {
  const prefix = jobs.keys.queue("");
  return { prefix, suffixes: [jobs.keys.processing(""), jobs.keys.deadletter("")].map((key) => key.slice(prefix.length)) };
}

/**
 * The model a `relay:` key belongs to. A model alias may itself contain ":", so a key that
 * is exactly a configured model's queue is taken as that; otherwise a processing or
 * dead-letter suffix is stripped.
 */
export function modelOfQueueKey(jobs: JobStore, key: string, configured: ReadonlySet<string>): string | undefined {
  const { prefix, suffixes } = queueLayout(jobs);
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  if (configured.has(rest)) return rest;
  const suffix = suffixes.find((s) => rest.endsWith(s));
  const model = suffix ? rest.slice(0, -suffix.length) : rest;
  return model === "" ? undefined : model;
}

/** Configured models first, then the ones only the store knows, in SCAN pages. A read error propagates. */
export async function modelsToVisit(kv: KvStore, jobs: JobStore, signal: AbortSignal): Promise<string[]> {
  const configured = new Set(jobs.queueModels());
  const models = new Set(configured);
  const { prefix } = queueLayout(jobs);
  let cursor = "0";
  do {
    checkStopped(signal);
    const page = await kv.scan(prefix, cursor, BATCH);
    cursor = page.cursor;
    for (const key of page.keys) {
      const model = modelOfQueueKey(jobs, key, configured);
      if (model !== undefined) models.add(model);
    }
  } while (cursor !== "0");
  return [...models];
}
