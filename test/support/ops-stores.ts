/**
 * The stores every atomic-op test runs on: the memory store (the ops' JS twins), the suite's
 * redis-server (the Lua scripts) and the suite's Redis Cluster (the scripts where a key outside
 * one slot is refused), the Redis ones over several connections so that races between
 * "replicas" are real.
 */
import { afterAll, beforeAll, beforeEach, inject } from "vitest";
import { MemoryKv } from "../../adapters/kv-memory/index.ts";
import { RedisKv } from "../../adapters/kv-redis/index.ts";
import { ManualClock } from "../../core/clock.ts";
import type { KvStore } from "../../core/stores/kv.ts";

export interface OpsStore {
  name: string;
  open: () => Promise<KvStore[]>;
}

export const opsStores: OpsStore[] = [
  { name: "memory", open: async () => [new MemoryKv(new ManualClock())] },
  { name: "redis", open: async () => await Promise.all(Array.from({ length: 4 }, () => RedisKv.connect({ url: inject("redisUrl") }))) },
  {
    name: "redis cluster",
    open: async () => {
      const stores = await Promise.all(Array.from({ length: 4 }, () => RedisKv.connect({ cluster: { nodes: inject("redisClusterAddrs") } })));
      for (const store of stores) onCluster.add(store);
      return stores;
    },
  },
];

/** Stores on a cluster: a test's keys there share one hash tag, as one owner's keys do in the gateway. */
const onCluster = new WeakSet<KvStore>();

/**
 * For a `describe.each(opsStores)` block: opens the stores before its tests (handing them to
 * `onOpen`), closes them after, and gives each test a random key prefix of its own, so tests
 * never see each other's keys. Returns the key builder.
 */
export function keysPerTest(prefix: string, open: OpsStore["open"], onOpen: (stores: KvStore[]) => void): (name: string) => string {
  let opened: KvStore[] = [];
  let current = "";
  beforeAll(async () => {
    opened = await open();
    onOpen(opened);
  });
  afterAll(async () => {
    await Promise.all(opened.map((store) => store.close()));
  });
  beforeEach(() => {
    current = onCluster.has(opened[0]) ? `{${prefix}:${crypto.randomUUID()}}:` : `${prefix}:${crypto.randomUUID()}:`;
  });
  return (name) => `${current}${name}`;
}
