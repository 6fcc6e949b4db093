/** The LLM proxy's atomic operation on both stores: the memory store's JS twin and the Lua script on the suite's redis-server. */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { RedisKv } from "../../../adapters/kv-redis/index.ts";
import type { KvStore } from "../../../core/stores/kv.ts";
import { hashAdd } from "../../../plugins/llm-proxy/ops.ts";

const stores: { name: string; open: () => Promise<KvStore> }[] = [
  { name: "memory", open: async () => new MemoryKv() },
  { name: "redis", open: async () => await RedisKv.connect({ url: inject("redisUrl") }) },
];

describe.each(stores)("llm-proxy ops: $name", ({ open }) => {
  let kv: KvStore;
  beforeAll(async () => {
    kv = await open();
  });
  afterAll(async () => {
    await kv.close();
  });

  it("hashAdd adds to every field named, creating the hash and fields as needed", async () => {
    const key = `llmops:${crypto.randomUUID()}`;
    expect(await kv.run(hashAdd, [key], ['["a","","prompt"]', 5, '["a","","completion"]', 3])).toBe(2);
    expect(await kv.run(hashAdd, [key], ['["a","","prompt"]', 2])).toBe(1);
    expect(await kv.hgetall(key)).toEqual({ '["a","","prompt"]': "7", '["a","","completion"]': "3" });
  });
});
