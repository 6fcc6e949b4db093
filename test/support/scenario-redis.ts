/**
 * The Redis a reliability scenario runs on, one of three topologies (docs/scale-out.md: the
 * scenarios pass on a single Redis, on Sentinel and on Cluster), and a store to read its state back
 * with: the gateway's own RedisKv, so a key is read under the name that mode stores it
 * (`{jobs}job:…` on a cluster).
 *
 * - redis: the suite's redis-server, the file's database, flushed first;
 * - sentinel: the suite's Sentinel set, the file's database on its primary, flushed first;
 * - cluster: a 3-primary cluster of the file's own (a cluster has only database 0, and the
 *   scenarios' keys, `relay:whisper` and `job:*`, would meet those of other files on the
 *   suite's cluster), stopped by `close`.
 */
import { createClient } from "redis";
import { inject } from "vitest";
import { RedisKv } from "../../adapters/kv-redis/index.ts";
import { type RedisTopology, TOPOLOGY_NAMES } from "./reliability-report.ts";
import { nodeCommand, type RedisClusterProcesses, SENTINEL_MASTER, startRedisCluster } from "./redis-topologies.ts";
import { flushRedisDb } from "./stores-yaml.ts";

export { type RedisTopology, TOPOLOGY_NAMES };

/** For `describe.each`: every topology, each scenario file's figures tagged by it. */
export const REDIS_TOPOLOGIES: Array<{ topology: RedisTopology; name: string }> = (["redis", "sentinel", "cluster"] as const).map((topology) => ({
  topology,
  name: TOPOLOGY_NAMES[topology],
}));

export interface ScenarioRedis {
  topology: RedisTopology;
  /** The gateway config's `redis:` block (no final newline). */
  yaml: string;
  /** Reads (and may write) what the gateway stored. */
  kv: RedisKv;
  /** Every key under `prefix` (plain names, on a cluster too). */
  keys(prefix: string): Promise<string[]>;
  close(): Promise<void>;
}

/** The test's reads wait longer than a gateway would: a loaded machine is no finding. */
const READER = { commandTimeoutMs: 5_000 };

async function sentinelPrimaryPort(): Promise<number> {
  const sentinel = Number(inject("redisSentinelAddrs")[0].split(":")[1]);
  const reply = (await nodeCommand(sentinel, ["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_MASTER])) as string[];
  return Number(reply[1]);
}

export async function openScenarioRedis(topology: RedisTopology, db: number): Promise<ScenarioRedis> {
  let cluster: RedisClusterProcesses | undefined;
  let yaml: string;
  let kv: RedisKv;
  if (topology === "redis") {
    await flushRedisDb(db);
    yaml = `redis:\n  addr: ${JSON.stringify(inject("redisUrl"))}\n  db: ${db}`;
    kv = await RedisKv.connect({ url: inject("redisUrl"), db, ...READER });
  } else if (topology === "sentinel") {
    const addrs = inject("redisSentinelAddrs");
    yaml = `redis:\n  db: ${db}\n  sentinel:\n    master_name: ${SENTINEL_MASTER}\n    addrs: ${JSON.stringify(addrs)}`;
    kv = await RedisKv.connect({ sentinel: { masterName: SENTINEL_MASTER, sentinels: addrs }, db, ...READER });
    // FLUSHDB on the database the gateway will use: through a client that SELECTed it.
    await flushSentinelDb(await sentinelPrimaryPort(), db);
  } else {
    cluster = await startRedisCluster(3);
    yaml = `redis:\n  cluster:\n    addrs: ${JSON.stringify(cluster.addrs)}`;
    kv = await RedisKv.connect({ cluster: { nodes: cluster.addrs }, ...READER });
  }
  return {
    topology,
    yaml,
    kv,
    async keys(prefix) {
      const found: string[] = [];
      let cursor = "0";
      do {
        const page = await kv.scan(prefix, cursor, 500);
        found.push(...page.keys);
        cursor = page.cursor;
      } while (cursor !== "0");
      return found;
    },
    async close() {
      await kv.close();
      await cluster?.stop();
    },
  };
}

async function flushSentinelDb(port: number, db: number): Promise<void> {
  const client = createClient({ url: `redis://127.0.0.1:${port}`, database: db });
  await client.connect();
  await client.flushDb();
  await client.close();
}
