/**
 * `redis.tls` on a Cluster and a Sentinel set of this file's own that speak only TLS
 * (test/support/redis-topologies.ts with `tls: true`: nodes, cluster bus, replication and
 * sentinels all on TLS, one throwaway CA, a certificate naming TLS_SERVER_NAME and no IP).
 * The store works in both modes with the CA and the server name, and a CA that did not sign
 * the nodes' certificates is refused with a message that says so, not a bare timeout.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RedisKv } from "../../adapters/kv-redis/index.ts";
import { keySlot } from "../../adapters/kv-redis/slot.ts";
import { windowIncrement } from "../../core/stores/atomic-ops.ts";
import {
  nodeCommand,
  type RedisClusterProcesses,
  type RedisSentinelProcesses,
  SENTINEL_MASTER,
  startRedisCluster,
  startRedisSentinel,
} from "../support/redis-topologies.ts";
import { TLS_SERVER_NAME, type TlsFiles } from "../support/tls-files.ts";

let cluster: RedisClusterProcesses;
let set: RedisSentinelProcesses;

beforeAll(async () => {
  [cluster, set] = await Promise.all([startRedisCluster(3, { tls: true }), startRedisSentinel({ tls: true })]);
}, 120_000);
afterAll(async () => {
  await Promise.all([cluster?.stop(), set?.stop()]);
});

/** The TLS files a topology was started with (it was: `tls: true`). */
const filesOf = (topology: { tls: TlsFiles | undefined }): TlsFiles => {
  if (!topology.tls) throw new Error("topology started without TLS");
  return topology.tls;
};
const tlsWith = (caFile: string) => ({ ca: readFileSync(caFile, "utf8"), serverName: TLS_SERVER_NAME });
const TIMEOUT = 60_000;
const CERTIFICATE_REFUSED = "self-signed certificate in certificate chain";

/** Keys whose slots fall in every third of the slot space, so every primary of three holds some (redis-cli splits the slots evenly). */
function keysOnEveryThird(prefix: string, perThird: number): string[] {
  const thirds: string[][] = [[], [], []];
  for (let i = 0; thirds.some((keys) => keys.length < perThird); i++) {
    const key = `${prefix}${i}`;
    const third = thirds[Math.floor((keySlot(key) * 3) / 16_384)];
    if (third.length < perThird) third.push(key);
  }
  return thirds.flat();
}

describe("a Redis Cluster over TLS", () => {
  it("round-trips keys on all three primaries, scans them all and runs a script, with the CA and server name", async () => {
    const tls = filesOf(cluster);
    const kv = await RedisKv.connect({ cluster: { nodes: cluster.addrs }, tls: tlsWith(tls.caFile) });
    try {
      const prefix = `tls:${crypto.randomUUID()}:`;
      const keys = keysOnEveryThird(prefix, 3);
      await Promise.all(keys.map((key) => kv.set(key, `v-${key}`, 60_000)));
      expect(await Promise.all(keys.map((key) => kv.get(key)))).toEqual(keys.map((key) => `v-${key}`));
      // Every primary holds some: the store reached each node over TLS, not only the first.
      const perNode = await Promise.all(
        cluster.nodes.map(async (n) => ((await nodeCommand(n.port, ["KEYS", `${prefix}*`], undefined, tls)) as string[]).length),
      );
      expect(perNode).toHaveLength(3);
      expect(perNode.every((count) => count > 0), `keys per node: ${perNode.join(", ")}`).toBe(true);

      const seen: string[] = [];
      let cursor = "0";
      do {
        const page = await kv.scan(prefix, cursor, 100);
        seen.push(...page.keys);
        cursor = page.cursor;
      } while (cursor !== "0");
      expect(seen.sort()).toEqual([...keys].sort());

      const window = `rl:echo:${crypto.randomUUID()}`;
      expect((await kv.run(windowIncrement, [window], [3, 60_000]))[0]).toBe(3);
      expect((await kv.run(windowIncrement, [window], [2, 60_000]))[0]).toBe(5);
    } finally {
      await kv.close();
    }
  }, TIMEOUT);

  it("refuses nodes whose certificate another CA signed, naming the certificate problem", async () => {
    await expect(RedisKv.connect({ cluster: { nodes: cluster.addrs }, tls: tlsWith(filesOf(cluster).wrongCaFile), connectTimeoutMs: 3_000 })).rejects.toThrow(
      new RegExp(`Redis Cluster at 127\\.0\\.0\\.1:\\d+.* unavailable \\(${CERTIFICATE_REFUSED}\\)`),
    );
  }, TIMEOUT);
});

describe("a Redis Sentinel set over TLS", () => {
  const target = () => ({ masterName: SENTINEL_MASTER, sentinels: set.addrs });

  it("round-trips keys on the primary the sentinels name and runs a script, with the CA and server name", async () => {
    const tls = filesOf(set);
    const kv = await RedisKv.connect({ sentinel: target(), tls: tlsWith(tls.caFile) });
    try {
      const key = `job:${crypto.randomUUID()}`;
      await kv.set(key, "over-tls", 60_000);
      expect(await kv.get(key)).toBe("over-tls");
      expect((await kv.run(windowIncrement, [`rl:echo:${crypto.randomUUID()}`], [4, 60_000]))[0]).toBe(4);
      // The sentinels (asked over TLS) name the primary the store wrote to.
      const primary = await set.primaryPort();
      expect(primary).toBe(set.primary.port);
      expect(await nodeCommand(primary, ["GET", key], undefined, tls)).toBe("over-tls");
    } finally {
      await kv.close();
    }
  }, TIMEOUT);

  it("refuses sentinels whose certificate another CA signed, naming the certificate problem", async () => {
    await expect(
      RedisKv.connect({ sentinel: target(), tls: tlsWith(filesOf(set).wrongCaFile), connectTimeoutMs: 3_000 }),
    ).rejects.toThrow(new RegExp(`Redis Sentinel primary "${SENTINEL_MASTER}" (unavailable \\(|did not answer .*; not connected: )${CERTIFICATE_REFUSED}`));
  }, TIMEOUT);
});
