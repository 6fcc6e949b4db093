/**
 * The batch plugin in-process, on every built-in plugin (as the gateway installs them), the
 * memory store or a redis-server of this test file's own, a file object store in a temp dir,
 * and requests through `runtime.handle`. Background work (validating, running lines, the
 * sweep) runs only when a test drives it, so every step is deterministic.
 */
import { createClient } from "redis";
import { afterAll, beforeAll } from "vitest";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import type { FsObjectStore } from "../../../adapters/objects-fs/index.ts";
import type { Clock, ManualClock } from "../../../core/clock.ts";
import type { ProcessRole } from "../../../core/plugins/types.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import type { ObjectStore } from "../../../core/stores/objects.ts";
import { builtinPlugins } from "../../../plugins/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";
import { type RunningServer, startRedis } from "../../support/servers.ts";

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
  /** Another runtime's store (a second process on the same memory store); left open on close. */
  kv?: KvStore;
  /** Redis: keep what the store holds (a second process joining the first). */
  keepData?: boolean;
  /** Another runtime's object store (a second process; left open on close), or a wrapper of the temp-dir file store. */
  objects?: ObjectStore | ((files: FsObjectStore) => ObjectStore);
  /** The process the runtime is built for (default: a gateway). */
  role?: ProcessRole;
}

export async function batchRuntime(yaml: string, options: BatchRuntimeOptions): Promise<BatchRuntime> {
  const url = options.redisUrl?.() ?? "";
  if (options.store === "redis" && !options.keepData) await flush(url);
  const redis = options.store === "redis" ? await RedisKv.connect({ url }) : undefined;
  const kv = redis ?? options.kv;
  const started = await startTestRuntime(yaml, builtinPlugins, {
    role: options.role,
    objects: options.objects ?? "files",
    clock: options.clock,
    fetch: options.fetch,
    // Webhooks connect to the address they vetted; here, the test's receiver on loopback.
    fetchPinned: (url, _addresses, init) => fetch(url, init),
    ...(kv ? { kv } : {}),
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

/** One request line of an OpenAI batch input file. */
export function chatLine(customId: string, content: string, model = "chat-small", extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ custom_id: customId, method: "POST", url: "/v1/chat/completions", body: { model, messages: [{ role: "user", content }], ...extra } });
}

/**
 * Drives the batch plugin's background work (the sweep, then the lines, each until its work has
 * ended) until `done` says so, polling with a deadline; `advance` moves a manual clock each round
 * (retries of a line that met a transient failure are due later).
 */
export async function drive(
  gw: BatchRuntime,
  done: () => Promise<boolean>,
  options: { deadlineMs?: number; advance?: { clock: ManualClock; byMs: number } } = {},
): Promise<void> {
  const deadlineMs = options.deadlineMs ?? 15_000;
  const deadline = Date.now() + deadlineMs;
  const batches = gw.api.use("batches");
  while (Date.now() < deadline) {
    options.advance?.clock.advance(options.advance.byMs);
    await gw.runtime.runTaskNow("batches.sweep");
    await batches.idle();
    await gw.runtime.runTaskNow("batches.lines");
    await batches.idle();
    if (await done()) return;
  }
  throw new Error(`the batch work did not reach the expected state within ${deadlineMs} ms`);
}

/** Uploads `lines` as a batch input file and creates a batch on it; the batch object answered. */
export async function createBatch(
  gw: BatchRuntime,
  lines: readonly string[],
  options: { headers?: Record<string, string>; endpoint?: string; body?: Record<string, unknown> } = {},
): Promise<Record<string, unknown>> {
  const upload = await gw.json("/v1/files", { method: "POST", body: fileForm(lines.join("\n") + "\n"), headers: options.headers });
  if (upload.status !== 200) throw new Error(`upload failed: ${JSON.stringify(upload)}`);
  const created = await gw.json("/v1/batches", {
    method: "POST",
    headers: { "content-type": "application/json", ...options.headers },
    body: JSON.stringify({ input_file_id: upload.body.id, endpoint: options.endpoint ?? "/v1/chat/completions", completion_window: "24h", ...options.body }),
  });
  if (created.status !== 200) throw new Error(`create failed: ${JSON.stringify(created)}`);
  return created.body;
}

/** The lines of a file's content, parsed. */
export async function fileLines(gw: BatchRuntime, id: string, headers: Record<string, string> = {}): Promise<Array<Record<string, unknown>>> {
  const response = await gw.request(`/v1/files/${id}/content`, { headers });
  if (response.status !== 200) throw new Error(`file ${id}: ${response.status} ${await response.text()}`);
  return (await response.text())
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
