/**
 * How many Redis commands a request costs, on one Redis, on Sentinel and on a Cluster (the
 * figures of docs/scale-out.md's capacity guide): the servers' own `total_commands_processed`
 * (INFO stats, summed over every cluster primary) before and after a batch of sync requests and
 * of jobs, minus the idle traffic (health PINGs) measured over the same span without requests.
 * The hash tags move keys, they add no command: the counts match across modes.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { jobStatus, readyStatus, submit } from "../support/gateway-traffic.ts";
import {
  nodeCommand,
  type RedisClusterProcesses,
  type RedisSentinelProcesses,
  SENTINEL_MASTER,
  startRedisCluster,
  startRedisSentinel,
} from "../support/redis-topologies.ts";
import { type RunningServer, startRedis, TEST_BUCKET } from "../support/servers.ts";

let echo: FakeBackend;
let inference: InferenceBackend;
let single: RunningServer;
let cluster: RedisClusterProcesses;
let sentinel: RedisSentinelProcesses;
const running: GatewayProcess[] = [];
const figures: Record<string, { sync: number; job: number }> = {};

beforeAll(async () => {
  [echo, inference, single, cluster, sentinel] = await Promise.all([
    startBackend({ kind: "echo" }),
    startInferenceBackend(),
    startRedis(),
    startRedisCluster(),
    startRedisSentinel(),
  ]);
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
  await Promise.all([single.stop(), cluster.stop(), sentinel.stop(), echo.close(), inference.close()]);
  console.log(`Redis commands per request: ${JSON.stringify(figures)}`);
});

function config(redis: string): string {
  return `
server:
  consumer_header: X-Consumer
redis:
${redis}
object_store:
  endpoint: ${JSON.stringify(inject("s3Endpoint"))}
  access_key: S3RVER
  secret_key: S3RVER
  bucket: ${TEST_BUCKET}
relay:
  embedded: true
rate_limits:
  echo:
    "*": { rate: 100000, period: 1m }
  transcription:
    "*": { rate: 100000, period: 1m, max_concurrent: 100 }
services:
  - type: echo
    model: echo
    inference_url: ${echo.url}
    operations: { run: [/v1/echo] }
  - type: transcription
    model: whisper
    inference_url: ${inference.url}
    operations: { transcribe: [/transcribe] }
`;
}

const SYNC = 200;
const JOBS = 20;

async function commands(ports: number[]): Promise<number> {
  const stats = await Promise.all(ports.map((port) => nodeCommand(port, ["INFO", "stats"])));
  return stats.reduce<number>((sum, info) => sum + Number(/total_commands_processed:(\d+)/.exec(String(info))?.[1] ?? 0), 0);
}

async function measure(name: string, redis: string, ports: () => Promise<number[]>): Promise<void> {
  const gw = await startGateway(config(redis));
  running.push(gw);
  await waitUntil(async () => (await readyStatus(gw)) === 200, 15_000, () => gw.output().slice(-2000));
  const nodes = await ports();
  const t0 = Date.now();
  const sync = async () => {
    for (let i = 0; i < SYNC; i++) {
      const response = await fetch(`${gw.url}/v1/echo`, { method: "POST", headers: { "content-type": "application/json", "x-consumer": "ops" }, body: "{}" });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
  };
  const before = await commands(nodes);
  await sync();
  const afterSync = await commands(nodes);
  const syncMs = Date.now() - t0;
  const ids: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    const response = await submit(gw, `${name}-${i}`);
    expect(response.status).toBe(202);
    ids.push(((await response.json()) as { job_id: string }).job_id);
  }
  for (const id of ids) await waitUntil(async () => (await jobStatus(gw, id)) === "completed", 30_000);
  const afterJobs = await commands(nodes);
  const jobsMs = Date.now() - t0 - syncMs;
  // The idle rate (the relay's polling), measured once the work is done. Over one second its
  // estimate moved by a few commands per job on a loaded machine (Cluster 106.3 against 101.1
  // once, bound 5); over three it moves a third as much.
  const quietStart = await commands(nodes);
  const quietT0 = Date.now();
  await waitUntil(async () => Date.now() - quietT0 >= 3_000, 10_000);
  const idlePerMs = ((await commands(nodes)) - quietStart) / (Date.now() - quietT0);
  figures[name] = {
    sync: Math.round(((afterSync - before - idlePerMs * syncMs) / SYNC) * 10) / 10,
    job: Math.round(((afterJobs - afterSync - idlePerMs * jobsMs) / JOBS) * 10) / 10,
  };
  await gw.kill();
}

describe("Redis commands per request", () => {
  it("is the same on one Redis, on Sentinel and on a Cluster", async () => {
    await measure("single", `  addr: ${JSON.stringify(single.url)}`, async () => [single.port]);
    await measure(
      "sentinel",
      `  sentinel:\n    master_name: ${SENTINEL_MASTER}\n    addrs: ${JSON.stringify(sentinel.addrs)}`,
      async () => [await sentinel.primaryPort()],
    );
    await measure("cluster", `  cluster:\n    addrs: ${JSON.stringify(cluster.addrs)}`, async () => cluster.nodes.map((n) => n.port));
    for (const mode of ["sentinel", "cluster"]) {
      expect(Math.abs(figures[mode].sync - figures.single.sync), mode).toBeLessThanOrEqual(1);
      expect(Math.abs(figures[mode].job - figures.single.job), mode).toBeLessThanOrEqual(5);
    }
  }, 180_000);
});
