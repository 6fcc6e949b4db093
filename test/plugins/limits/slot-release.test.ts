/**
 * When the sync concurrency slot is given back (docs/design.md#a-finished-answer-is-settled):
 * before the client can have its whole answer, however long the store takes to apply the release.
 * The store here delays every release op, so a release that merely starts once the body is sent is
 * still pending when the client has read its answer (the window a client that sends its next
 * request at once can fall into, widened so it is met every time). On the memory store and on Redis
 * (database 17, flushed when the file starts). The real processes, LLM answers included, are
 * in test/e2e/answer-complete.test.ts.
 */
import { createClient } from "redis";
import { afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import type { AtomicOp, KvReply, KvStore } from "../../../core/stores/kv.ts";
import { type LimitsRuntime, limitsRuntime, until } from "./harness.ts";

const DB = 17;
const RELEASE_DELAY_MS = 30;

const CONFIG = `
services:
  - type: echo
    model: echo
    inference_url: http://backend
    operations: { run: ["/v1/echo"] }
    max_concurrent_sync: 2
`;

/** `kv`, with every slot release applied only after a delay; counts the releases asked for. */
function slowReleases(kv: KvStore): { kv: KvStore; releases: () => number } {
  let releases = 0;
  const slow = new Proxy(kv, {
    get(target, property, receiver) {
      if (property !== "run") return Reflect.get(target, property, receiver);
      return async <R extends KvReply>(op: AtomicOp<R>, keys: string[], args: (string | number)[]): Promise<R> => {
        if (op.name === "semaphoreRelease") {
          releases++;
          await new Promise((resolve) => setTimeout(resolve, RELEASE_DELAY_MS));
        }
        return await target.run(op, keys, args);
      };
    },
  });
  return { kv: slow, releases: () => releases };
}

const stores: Array<[string, () => Promise<KvStore>]> = [
  ["memory", async () => new MemoryKv()],
  ["redis", async () => await RedisKv.connect({ url: inject("redisUrl"), db: DB })],
];

beforeAll(async () => {
  const client = createClient({ url: inject("redisUrl"), database: DB });
  await client.connect();
  await client.flushDb();
  await client.close();
});

describe.each(stores)("on the %s store", (_name, open) => {
  let gw: LimitsRuntime | undefined;
  let store: KvStore | undefined;
  let releases: () => number = () => 0;
  afterEach(async () => {
    await gw?.close();
    await store?.close();
    gw = undefined;
    store = undefined;
  });

  async function start(): Promise<LimitsRuntime> {
    store = await open();
    // A test that failed may have left its slot taken.
    await store.del("sem:echo:echo:shared");
    const slow = slowReleases(store);
    releases = slow.releases;
    gw = await limitsRuntime(CONFIG, { kv: slow.kv });
    return gw;
  }

  const call = (g: LimitsRuntime) =>
    g.request("/v1/echo", { method: "POST", body: JSON.stringify({ model: "echo" }), headers: { "content-type": "application/json" } });
  const taken = async () => Number((await store?.get("sem:echo:echo:shared")) ?? "0");

  /** The next backend call, answered with `response`. */
  async function answerNext(g: LimitsRuntime, response: Response): Promise<void> {
    await until(() => g.backend.waiting.length === 1, "the request at the backend");
    g.backend.waiting[0].answer(response);
  }

  function chunks(...parts: Uint8Array[]): ReadableStream<Uint8Array> {
    return new ReadableStream({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    });
  }

  it("an answer the gateway reads whole: the slot is free when the client has the Response", async () => {
    const g = await start();
    const pending = call(g);
    const text = '{"done":1}';
    await answerNext(g, new Response(text, { headers: { "content-type": "application/json", "content-length": String(text.length) } }));
    const response = await pending;
    expect(await taken()).toBe(0);
    expect(await response.text()).toBe(text);
    expect(releases()).toBe(1);
  });

  it("a streamed answer: the slot is free when the body has ended", async () => {
    const g = await start();
    const pending = call(g);
    const encoder = new TextEncoder();
    await answerNext(
      g,
      new Response(chunks(encoder.encode("data: 1\n\n"), encoder.encode("data: 2\n\n")), { headers: { "content-type": "text/event-stream" } }),
    );
    const response = await pending;
    expect(await response.text()).toBe("data: 1\n\ndata: 2\n\n");
    expect(await taken()).toBe(0);
    expect(releases()).toBe(1);
  });

  it("a client that goes away mid-stream gives its slot back once", async () => {
    const g = await start();
    const abandoned = call(g);
    // The backend streams and never ends on its own.
    await answerNext(g, new Response(new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode("data: 1\n\n")) })));
    const reader = ((await abandoned).body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const kept = call(g);
    await until(() => g.backend.waiting.length === 1, "the second request at the backend");
    expect(await taken()).toBe(2);
    await reader.cancel();
    await until(async () => (await taken()) === 1, "the abandoned stream's slot");
    const text = '{"done":2}';
    g.backend.waiting[0].answer(new Response(text, { headers: { "content-length": String(text.length) } }));
    expect(await (await kept).text()).toBe(text);
    expect(await taken()).toBe(0);
    // One release per request: the abandoned one was not given back twice.
    expect(releases()).toBe(2);
  });
});
