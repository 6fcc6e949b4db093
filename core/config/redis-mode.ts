/**
 * Which Redis the `redis` section names: one Redis (`addr`), a Sentinel set
 * (`sentinel.addrs` + `sentinel.master_name`) or a Cluster (`cluster.addrs`); none = the
 * embedded store. A node list entry may hold several comma-separated addresses, and empty
 * entries are dropped, so one environment variable can carry a whole list
 * (`addrs: ["${REDIS_CLUSTER_ADDRS:-}"]`).
 */
import type { GatewayConfig } from "./schema.ts";

type RedisSection = GatewayConfig["redis"];

export type RedisMode =
  | { kind: "single"; addr: string; where: string }
  | { kind: "sentinel"; masterName: string; nodes: string[]; where: string }
  | { kind: "cluster"; nodes: string[]; where: string };

export function redisNodes(list: readonly string[] | undefined): string[] {
  return (list ?? []).flatMap((entry) => entry.split(",")).map((addr) => addr.trim()).filter((addr) => addr !== "");
}

/** The mode the section names (the first set of cluster, sentinel, addr; validation refuses several); undefined = embedded. */
export function redisModeOf(redis: RedisSection): RedisMode | undefined {
  const cluster = redisNodes(redis.cluster?.addrs);
  if (cluster.length > 0) return { kind: "cluster", nodes: cluster, where: `cluster ${cluster.join(",")}` };
  const sentinels = redisNodes(redis.sentinel?.addrs);
  const masterName = redis.sentinel?.master_name ?? "";
  if (sentinels.length > 0) return { kind: "sentinel", masterName, nodes: sentinels, where: `sentinel ${masterName}@${sentinels.join(",")}` };
  if (redis.addr !== "") return { kind: "single", addr: redis.addr, where: redis.addr };
  return undefined;
}

const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[^\s:/@[\]]+):\d{1,5}$/;

/** At most one mode, each complete. */
export function redisModeProblems(redis: RedisSection | undefined): string[] {
  if (!redis) return [];
  const problems: string[] = [];
  const sentinels = redisNodes(redis.sentinel?.addrs);
  const cluster = redisNodes(redis.cluster?.addrs);
  const masterName = redis.sentinel?.master_name ?? "";
  const modes = [redis.addr !== "" ? "redis.addr" : "", sentinels.length > 0 ? "redis.sentinel.addrs" : "", cluster.length > 0 ? "redis.cluster.addrs" : ""]
    .filter((m) => m !== "");
  if (modes.length > 1) problems.push(`redis: ${modes.join(" and ")} are both set; set exactly one (one Redis, a Sentinel set or a Cluster)`);
  if (sentinels.length > 0 && masterName === "") {
    problems.push("redis.sentinel.master_name: required with redis.sentinel.addrs (the name in `sentinel monitor NAME host port quorum`)");
  }
  if (sentinels.length === 0 && masterName !== "") problems.push("redis.sentinel.addrs: required with redis.sentinel.master_name (host:port of the sentinels)");
  if (cluster.length > 0 && redis.db !== 0) problems.push(`redis.db: ${redis.db} with redis.cluster: a Redis Cluster has only database 0; remove redis.db`);
  for (const [path, addrs] of [["redis.sentinel.addrs", sentinels], ["redis.cluster.addrs", cluster]] as const) {
    for (const addr of addrs) if (!HOST_PORT.test(addr)) problems.push(`${path}: "${addr}" is not host:port`);
  }
  return problems;
}
