/**
 * The models that have queues: every model of the current config, plus every model that
 * still has a `relay:` list in the store, so the queues of a model removed from the config
 * are still reaped and swept by the GC, and shown by `GET /-/queues`.
 */
import type { KvStore } from "../stores/kv.ts";
import type { JobStore } from "./types.ts";

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

/**
 * Configured models first, then the ones only the store knows, in SCAN pages of `count`;
 * `beforePage` may throw to stop (the GC stops when its runtime closes). A read error propagates.
 */
export async function queueModels(kv: KvStore, jobs: JobStore, options: { count?: number; beforePage?: () => void } = {}): Promise<string[]> {
  const configured = new Set(jobs.queueModels());
  const models = new Set(configured);
  const { prefix } = queueLayout(jobs);
  let cursor = "0";
  do {
    options.beforePage?.();
    const page = await kv.scan(prefix, cursor, options.count ?? 100);
    cursor = page.cursor;
    for (const key of page.keys) {
      const model = modelOfQueueKey(jobs, key, configured);
      if (model !== undefined) models.add(model);
    }
  } while (cursor !== "0");
  return [...models];
}
