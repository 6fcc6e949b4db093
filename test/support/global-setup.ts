/**
 * Vitest global setup: one redis-server and one s3rver for the whole run, on free ports, and a
 * 3-primary Redis Cluster and a Sentinel set (primary, replica, three sentinels) that the KV
 * contract suite and the atomic-op tests also run on. Tests that stop or fail over a node
 * start their own (support/redis-topologies.ts).
 */
import type { TestProject } from "vitest/node";
import type {} from "vitest";
import { startRedisCluster, startRedisSentinel } from "./redis-topologies.ts";
import { type RunningServer, startRedis, startS3 } from "./servers.ts";

declare module "vitest" {
  export interface ProvidedContext {
    redisUrl: string;
    s3Endpoint: string;
    /** host:port of the shared cluster's nodes. */
    redisClusterAddrs: string[];
    /** host:port of the shared Sentinel set's sentinels; the primary is named SENTINEL_MASTER. */
    redisSentinelAddrs: string[];
  }
}

let servers: Pick<RunningServer, "stop">[] = [];

export async function setup(project: TestProject): Promise<void> {
  const [redis, s3, cluster, sentinel] = await Promise.all([startRedis(), startS3(), startRedisCluster(), startRedisSentinel()]);
  servers = [redis, s3, cluster, sentinel];
  project.provide("redisUrl", redis.url);
  project.provide("s3Endpoint", s3.url);
  project.provide("redisClusterAddrs", cluster.addrs);
  project.provide("redisSentinelAddrs", sentinel.addrs);
}

export async function teardown(): Promise<void> {
  await Promise.all(servers.map((s) => s.stop()));
}
