/**
 * Reliability, scenarios 10 and 11 (docs/scale-out.md): the gateway on a Sentinel set and on a
 * Redis Cluster of the test's own, a node failing under steady traffic, the gateway process left
 * running (test/support/redis-topologies.ts starts the servers).
 *
 * 10. Sentinel: `SENTINEL FAILOVER` promotes the replica. Sync requests are all served (limit
 *     checks fail open meanwhile), the gateway follows the new primary without a restart, and
 *     what Redis acknowledged and replicated before the failover (a completed job) is still there.
 * 11. Cluster: the primary holding the job store's slot (`{jobs}`) is stopped and restarted
 *     (append-only file on). Sync requests are all served, job submissions answer 503 while
 *     it is down, and afterwards the same process is ready, finds the earlier job and runs new ones.
 *
 * Every wait polls with a deadline; figures go to the reliability report.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keySlot } from "../../adapters/kv-redis/slot.ts";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { jobStatus, readyStatus, steadyTraffic, submit } from "../support/gateway-traffic.ts";
import {
  nodeCommand,
  type RedisClusterProcesses,
  type RedisSentinelProcesses,
  SENTINEL_MASTER,
  startRedisCluster,
  startRedisSentinel,
} from "../support/redis-topologies.ts";
import { reportReliability } from "../support/reliability-report.ts";
import { TEST_BUCKET } from "../support/servers.ts";
import { inject } from "vitest";

let echo: FakeBackend;
let inference: InferenceBackend;
const running: GatewayProcess[] = [];
const topologies: Array<RedisClusterProcesses | RedisSentinelProcesses> = [];

beforeAll(async () => {
  [echo, inference] = await Promise.all([startBackend({ kind: "echo" }), startInferenceBackend()]);
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
  await Promise.all(topologies.splice(0).map((t) => t.stop()));
  await Promise.all([echo.close(), inference.close()]);
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
# Completed jobs stay readable, so the test can read a job again after the fault.
lifecycle:
  persists_result: true
rate_limits:
  echo:
    "*": { rate: 100000, period: 1m }
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

async function completedJob(gw: GatewayProcess, content: string): Promise<string> {
  const response = await submit(gw, content);
  expect(response.status).toBe(202);
  const id = ((await response.json()) as { job_id: string }).job_id;
  await waitUntil(async () => (await jobStatus(gw, id)) === "completed", 30_000, () => gw.output().slice(-2000));
  return id;
}

describe("scenario 10: Sentinel failover under steady traffic", () => {
  it("serves every sync request, follows the new primary without a restart, and keeps what was acknowledged", async () => {
    const set = await startRedisSentinel();
    topologies.push(set);
    const gw = await startGateway(config(`  sentinel:\n    master_name: ${SENTINEL_MASTER}\n    addrs: ${JSON.stringify(set.addrs)}`));
    running.push(gw);
    await waitUntil(async () => (await readyStatus(gw)) === 200, 15_000, () => gw.output().slice(-2000));

    const traffic = steadyTraffic(gw, "sentinel-steady");
    const beforeId = await completedJob(gw, "sentinel-before");
    // Acknowledged and replicated: the replica has everything the primary has.
    await waitUntil(async () => {
      const [primary, replica] = await Promise.all([set.primary.port, set.replica.port].map((port) => nodeCommand(port, ["INFO", "replication"])));
      const offset = (info: unknown) => /master_repl_offset:(\d+)/.exec(String(info))?.[1];
      return offset(primary) !== undefined && offset(primary) === offset(replica);
    }, 10_000);
    const sentBefore = traffic.sent;

    expect(await nodeCommand(set.sentinels[0].port, ["SENTINEL", "FAILOVER", SENTINEL_MASTER])).toBe("OK");
    await waitUntil(async () => (await set.primaryPort()) === set.replica.port, 20_000, () => "the sentinels never promoted the replica");
    // Until the sentinels demote it, the old primary still takes writes, and the resync from the
    // new primary then drops them: Sentinel's own loss window (docs/scale-out.md). The writes this
    // test counts on come after it.
    const demoted = async () => /role:slave/.test(String(await nodeCommand(set.primary.port, ["INFO", "replication"]).catch(() => "")));
    await waitUntil(demoted, 20_000, () => "the sentinels never demoted the old primary");
    // The gateway writes to the new primary: a new job runs to completion, the old one is still there.
    // While the client is still switching, a submission may get the store-error 503
    // (docs/design.md#failing-open).
    await waitUntil(async () => (await readyStatus(gw)) === 200, 30_000, () => gw.output().slice(-2000));
    let refusedDuringSwitch = 0;
    let afterId = "";
    await waitUntil(
      async () => {
        const response = await submit(gw, `sentinel-after-${refusedDuringSwitch}`);
        if (response.status === 503) {
          refusedDuringSwitch++;
          await response.arrayBuffer();
          return false;
        }
        expect(response.status).toBe(202);
        afterId = ((await response.json()) as { job_id: string }).job_id;
        return true;
      },
      15_000,
      () => gw.output().slice(-2000),
    );
    await waitUntil(async () => (await jobStatus(gw, afterId)) === "completed", 30_000, () => gw.output().slice(-2000));
    expect(await jobStatus(gw, beforeId)).toBe("completed");
    const writesOnNewPrimary = Number(String(await nodeCommand(set.replica.port, ["EXISTS", `job:${afterId}`])));
    expect(writesOnNewPrimary).toBe(1);
    await waitUntil(() => traffic.sent >= sentBefore + 30, 15_000);
    const counts = await traffic.stop();

    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    expect(Object.fromEntries(counts)).toEqual({ 200: total });
    expect(gw.child.exitCode).toBeNull();
    reportReliability({
      id: 10,
      scenario: "Sentinel failover",
      load: "steady sync traffic (1 client) + job submissions, embedded relay",
      faults: "SENTINEL FAILOVER: the replica promoted, the old primary made a replica; gateway left running",
      requests: total + 2 + refusedDuringSwitch,
      lost: 0,
      duplicated: 0,
      errors: 0,
      ...(refusedDuringSwitch > 0
        ? { expectedErrors: { count: refusedDuringSwitch, why: "job submissions answered 503 while the client switched primaries" } }
        : {}),
      details: { sync_requests: total, jobs_completed: 2 },
    });
  }, 120_000);
});

describe("scenario 11: a Cluster primary restarted under steady traffic", () => {
  it("serves every sync request, refuses jobs with 503 while the job store's primary is down, and recovers without a restart", async () => {
    const cluster = await startRedisCluster(3, { persist: true });
    topologies.push(cluster);
    const gw = await startGateway(config(`  cluster:\n    addrs: ${JSON.stringify(cluster.addrs)}`));
    running.push(gw);
    await waitUntil(async () => (await readyStatus(gw)) === 200, 15_000, () => gw.output().slice(-2000));

    const traffic = steadyTraffic(gw, "cluster-steady");
    const beforeId = await completedJob(gw, "cluster-before");
    // The primary serving the job store's slot.
    const slot = keySlot("{jobs}");
    const owners = await Promise.all(
      cluster.nodes.map(async (n) => ({ n, keys: Number(await nodeCommand(n.port, ["CLUSTER", "COUNTKEYSINSLOT", String(slot)])) })),
    );
    const jobsNode = owners.find((o) => o.keys > 0)?.n;
    expect(jobsNode).toBeDefined();
    const sentBefore = traffic.sent;
    await jobsNode!.stop();

    await waitUntil(async () => (await readyStatus(gw)) === 503, 15_000, () => "ready never went 503 with a primary down");
    const refused = await submit(gw, "cluster-during");
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { message: string } }).error.message.length).toBeGreaterThan(0);
    await waitUntil(() => traffic.sent >= sentBefore + 30, 15_000, () => "sync traffic stalled while a primary was down");

    await jobsNode!.start();
    await cluster.waitHealthy();
    await waitUntil(async () => (await readyStatus(gw)) === 200, 30_000, () => gw.output().slice(-2000));
    expect(await jobStatus(gw, beforeId)).toBe("completed");
    await completedJob(gw, "cluster-after");
    expect(inference.runs.get("cluster-during")).toBeUndefined();
    const sentAtRecovery = traffic.sent;
    await waitUntil(() => traffic.sent >= sentAtRecovery + 20, 10_000);
    const counts = await traffic.stop();

    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    expect(Object.fromEntries(counts)).toEqual({ 200: total });
    expect(gw.child.exitCode).toBeNull();
    reportReliability({
      id: 11,
      scenario: "Cluster primary restarted",
      load: "steady sync traffic (1 client) + job submissions, embedded relay",
      faults: "the primary of the job store's slot stopped, then restarted (append-only file); gateway left running",
      requests: total + 3,
      lost: 0,
      duplicated: 0,
      errors: 0,
      expectedErrors: { count: 1, why: "a job submission answered 503 while the job store's primary was down" },
      details: { sync_requests: total, jobs_completed: 2 },
    });
  }, 120_000);
});
