/**
 * The batch plugin in-process, on every built-in plugin (as the gateway installs them), the
 * memory store or a redis-server of this test file's own, a file object store in a temp dir,
 * and requests through `runtime.handle`. Background work (validating, running lines, the
 * sweep) runs only when a test drives it, so every step is deterministic.
 */
import { createClient } from "redis";
import { afterAll, beforeAll } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import type { Clock } from "../../../core/clock.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";
import { startRedis, type RunningServer } from "../../support/servers.ts";

export type Store = "memory" | "redis";
export const STORES: readonly Store[] = ["memory", "redis"];

/** A redis-server of the calling test file's own (started before its tests, stopped after). */
export function ownRedis(): () => string {
  let redis: RunningServer | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  }, 30_000);
  afterAll(async () => {
    await redis?.stop();
  });
  return () => {
    if (!redis) throw new Error("the test file's redis-server has not started");
    return redis.url;
  };
}

export interface BatchRuntime extends TestRuntime {
  /** The store the runtime runs on, when it is Redis (closed with the runtime). */
  redis?: KvStore;
  json(path: string, init?: RequestInit): Promise<{ status: number; body: Record<string, unknown> }>;
}

export interface BatchRuntimeOptions {
  store: Store;
  redisUrl?: () => string;
  clock?: Clock;
  fetch?: typeof fetch;
}

export async function batchRuntime(yaml: string, options: BatchRuntimeOptions): Promise<BatchRuntime> {
  const url = options.redisUrl?.() ?? "";
  if (options.store === "redis") await flush(url);
  const redis = options.store === "redis" ? await RedisKv.connect({ url }) : undefined;
  const started = await startTestRuntime(yaml, builtinPlugins, {
    objects: "files",
    clock: options.clock,
    fetch: options.fetch,
    ...(redis ? { kv: redis } : {}),
  });
  return {
    ...started,
    redis,
    async json(path, init) {
      const response = await started.request(path, init);
      const text = await response.text();
      return { status: response.status, body: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>) };
    },
    async close() {
      await started.close();
      await redis?.close();
    },
  };
}

/** Empties the test file's own redis-server: each test starts from nothing. */
async function flush(url: string): Promise<void> {
  const client = createClient({ url });
  await client.connect();
  await client.flushAll();
  await client.close();
}

/** A multipart upload of `content` as a file, with `purpose` (left out when null). */
export function fileForm(content: string, purpose: string | null = "batch", filename = "input.jsonl", purposeFirst = true): FormData {
  const form = new FormData();
  if (purposeFirst && purpose !== null) form.append("purpose", purpose);
  form.append("file", new Blob([content], { type: "application/jsonl" }), filename);
  if (!purposeFirst && purpose !== null) form.append("purpose", purpose);
  return form;
}
