/**
 * A Redis Cluster and a Sentinel set of the test's own, on free loopback ports in a temp
 * dir: `redis-server --cluster-enabled yes` x N joined by `redis-cli --cluster create`, and
 * one primary + one replica watched by three `redis-server --sentinel`. Both binaries come
 * with the apt `redis-server` package (redis-cli through its redis-tools dependency).
 * `tls: true` makes every node and sentinel speak only TLS, to clients and to each other
 * (tls-files.ts: one certificate naming TLS_SERVER_NAME, so clients need a server name).
 * Nothing is kept on disk past `stop()`; every wait polls with a deadline.
 */
import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { freePort, redisServerInstalled, spawnListening, withRetries } from "./servers.ts";
import { makeTlsFiles, TLS_SERVER_NAME, type TlsFiles, tlsServerArgs } from "./tls-files.ts";

export interface RedisNodeProcess {
  port: number;
  addr: string;
  /** Stops the process (SIGTERM, then SIGKILL); `start` brings it back on the same port and files. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
}

function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  return new Promise((resolve) => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill(signal);
    setTimeout(() => child.kill("SIGKILL"), 3000).unref?.();
  });
}

function node(port: number, args: string[]): RedisNodeProcess {
  let child: ChildProcess | undefined;
  const self: RedisNodeProcess = {
    port,
    addr: `127.0.0.1:${port}`,
    async stop(signal) {
      await stopChild(child, signal);
      child = undefined;
    },
    async start() {
      child = await spawnListening("redis-server", args, port);
    },
  };
  return self;
}

/** Starts every node; when one fails, stops the others (and removes `dir`) before rethrowing. */
async function startAllOrNone(nodes: RedisNodeProcess[], dir: string): Promise<void> {
  const results = await Promise.allSettled(nodes.map((n) => n.start()));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) {
    await stopAll(nodes, dir);
    throw failed.reason;
  }
}

async function stopAll(nodes: RedisNodeProcess[], dir: string): Promise<void> {
  await Promise.all(nodes.map((n) => n.stop()));
  rmSync(dir, { recursive: true, force: true });
}

/** Polls `check` until it holds, or throws naming `what`. */
export async function pollUntil(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}${last instanceof Error ? ` (last error: ${last.message})` : ""}`);
}

/** One command on a fresh connection to a node (tests only: slow but simple); `tls`: a TLS-only node, checked against that CA. */
export async function nodeCommand(port: number, args: string[], password?: string, tls?: Pick<TlsFiles, "caFile">): Promise<unknown> {
  const socket = tls ? { tls: true as const, ca: readFileSync(tls.caFile, "utf8"), servername: TLS_SERVER_NAME } : {};
  const client = createClient({ url: `${tls ? "rediss" : "redis"}://127.0.0.1:${port}`, password, socket: { ...socket, reconnectStrategy: false } });
  client.on("error", () => {});
  await client.connect();
  try {
    return await client.sendCommand(args);
  } finally {
    // A node may have closed the connection itself (a demoted primary drops its clients).
    if (client.isOpen) client.destroy();
  }
}

function requireRedis(): void {
  if (!redisServerInstalled()) throw new Error("redis-server is not installed; the test suite needs it: apt-get install redis-server");
}

/** A fresh temp dir, with the TLS files in it when asked for; removed again if making them fails. */
function topologyDir(prefix: string, tls: boolean | undefined): { dir: string; tls: TlsFiles | undefined } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    return { dir, tls: tls ? makeTlsFiles(dir) : undefined };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** The flags that make a node listen on `port`: plain, or TLS only. */
function listenArgs(port: number, tls: TlsFiles | undefined): string[] {
  return tls ? tlsServerArgs(tls, port) : ["--port", String(port)];
}

export interface RedisClusterProcesses {
  nodes: RedisNodeProcess[];
  /** host:port of every node, for `redis.cluster.addrs`. */
  addrs: string[];
  /** The CA and certificate files when started with `tls: true`. */
  tls: TlsFiles | undefined;
  /** Resolves when every node reports `cluster_state:ok`. */
  waitHealthy(): Promise<void>;
  stop(): Promise<void>;
}

interface ClusterOptions {
  persist?: boolean;
  password?: string;
  /** Nodes, cluster bus and `redis-cli --cluster create` on TLS only. */
  tls?: boolean;
}

/**
 * `primaries` cluster nodes, no replicas, every slot assigned. `persist`: an append-only file
 * each, so a node stopped with SIGTERM comes back with what it acknowledged.
 */
export async function startRedisCluster(primaries = 3, options: ClusterOptions = {}): Promise<RedisClusterProcesses> {
  requireRedis();
  return await withRetries(() => startClusterOnce(primaries, options));
}

async function startClusterOnce(primaries: number, options: ClusterOptions): Promise<RedisClusterProcesses> {
  const { dir, tls } = topologyDir("gw-redis-cluster-", options.tls);
  const nodes: RedisNodeProcess[] = [];
  for (let i = 0; i < primaries; i++) {
    // The bus port is chosen too: port + 10000 (the default) may be taken or past 65535.
    const [port, bus] = [await freePort(), await freePort()];
    nodes.push(
      node(port, [
        ...listenArgs(port, tls),
        "--cluster-port",
        String(bus),
        "--bind",
        "127.0.0.1",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        `nodes-${port}.conf`,
        "--cluster-node-timeout",
        "2000",
        "--save",
        "",
        "--appendonly",
        options.persist ? "yes" : "no",
        "--appendfilename",
        `appendonly-${port}.aof`,
        "--appenddirname",
        `aof-${port}`,
        "--dir",
        dir,
        ...(options.password ? ["--requirepass", options.password, "--masterauth", options.password] : []),
        ...(tls ? ["--tls-cluster", "yes"] : []),
      ]),
    );
  }
  await startAllOrNone(nodes, dir);
  const addrs = nodes.map((n) => n.addr);
  const auth = options.password ? ["-a", options.password, "--no-auth-warning"] : [];
  const cliTls = tls ? ["--tls", "--cacert", tls.caFile, "--sni", TLS_SERVER_NAME] : [];
  const created = spawnSync("redis-cli", [...auth, ...cliTls, "--cluster", "create", ...addrs, "--cluster-replicas", "0", "--cluster-yes"], {
    encoding: "utf8",
  });
  if (created.status !== 0) {
    await stopAll(nodes, dir);
    throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
  }
  const waitHealthy = () =>
    pollUntil(async () => {
      const states = await Promise.all(nodes.map((n) => nodeCommand(n.port, ["CLUSTER", "INFO"], options.password, tls)));
      return states.every((info) => String(info).includes("cluster_state:ok"));
    }, "the cluster to report cluster_state:ok");
  try {
    await waitHealthy();
  } catch (error) {
    await stopAll(nodes, dir);
    throw error;
  }
  return { nodes, addrs, tls, waitHealthy, stop: () => stopAll(nodes, dir) };
}

export const SENTINEL_MASTER = "gwprimary";

export interface RedisSentinelProcesses {
  primary: RedisNodeProcess;
  replica: RedisNodeProcess;
  sentinels: RedisNodeProcess[];
  /** host:port of the sentinels, for `redis.sentinel.addrs`. */
  addrs: string[];
  /** The CA and certificate files when started with `tls: true`. */
  tls: TlsFiles | undefined;
  /** The port of the node the sentinels call primary now. */
  primaryPort(): Promise<number>;
  stop(): Promise<void>;
}

interface SentinelOptions {
  password?: string;
  sentinelPassword?: string;
  /** Nodes, replication and sentinels on TLS only; the sentinels talk TLS to the nodes and to each other. */
  tls?: boolean;
}

/**
 * One primary and one replica, watched by three sentinels (quorum 2) that fail over after 1 s down.
 * `password`: the primary's and replica's `requirepass` (the sentinels' `auth-pass`);
 * `sentinelPassword`: the sentinels' own `requirepass`.
 */
export async function startRedisSentinel(options: SentinelOptions = {}): Promise<RedisSentinelProcesses> {
  requireRedis();
  return await withRetries(() => startSentinelOnce(options));
}

async function startSentinelOnce(options: SentinelOptions): Promise<RedisSentinelProcesses> {
  const { dir, tls } = topologyDir("gw-redis-sentinel-", options.tls);
  const [p, r] = [await freePort(), await freePort()];
  const auth = options.password ? ["--requirepass", options.password, "--masterauth", options.password] : [];
  const replication = tls ? ["--tls-replication", "yes"] : [];
  const data = (
    port: number,
  ) => [
    ...listenArgs(port, tls),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dir,
    "--dbfilename",
    `dump-${port}.rdb`,
    ...auth,
    ...replication,
  ];
  const primary = node(p, data(p));
  const replica = node(r, [...data(r), "--replicaof", "127.0.0.1", String(p)]);
  await startAllOrNone([primary, replica], dir);
  const sentinels: RedisNodeProcess[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    // A sentinel rewrites its config file, so each has its own.
    const file = join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      file,
      [
        ...(tls
          ? [
            "port 0",
            `tls-port ${port}`,
            `tls-cert-file ${tls.certFile}`,
            `tls-key-file ${tls.keyFile}`,
            `tls-ca-cert-file ${tls.caFile}`,
            "tls-auth-clients no",
            "tls-replication yes",
          ]
          : [`port ${port}`]),
        "bind 127.0.0.1",
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${p} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
        `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
        ...(options.password ? [`sentinel auth-pass ${SENTINEL_MASTER} ${options.password}`] : []),
        ...(options.sentinelPassword ? [`requirepass ${options.sentinelPassword}`, `sentinel sentinel-pass ${options.sentinelPassword}`] : []),
        "",
      ].join("\n"),
    );
    sentinels.push(node(port, [file, "--sentinel"]));
  }
  try {
    await startAllOrNone(sentinels, dir);
  } catch (error) {
    await stopAll([primary, replica], dir);
    throw error;
  }
  const primaryPort = async () => {
    const reply = (await nodeCommand(sentinels[0].port, ["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_MASTER], options.sentinelPassword, tls)) as string[];
    return Number(reply[1]);
  };
  const all = [...sentinels, primary, replica];
  // Ready for a failover: the replica is in sync and every sentinel knows it.
  try {
    await pollUntil(async () => {
      const info = String(await nodeCommand(r, ["INFO", "replication"], options.password, tls));
      if (!info.includes("master_link_status:up")) return false;
      const known = await Promise.all(sentinels.map((s) => nodeCommand(s.port, ["SENTINEL", "REPLICAS", SENTINEL_MASTER], options.sentinelPassword, tls)));
      return known.every((list) => Array.isArray(list) && list.length === 1);
    }, "the replica to sync and the sentinels to know it");
  } catch (error) {
    await stopAll(all, dir);
    throw error;
  }
  return { primary, replica, sentinels, addrs: sentinels.map((s) => s.addr), tls, primaryPort, stop: () => stopAll(all, dir) };
}
