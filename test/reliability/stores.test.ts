/**
 * Reliability, scenarios 1 and 2 (docs/design.md#failing-open): a store goes away under steady
 * traffic and comes back on the same port, with the gateway process left running.
 *
 * 1. A private redis-server is stopped and restarted: sync requests keep being served (limits
 *    fail open, errors counted), job submissions answer 503 and leave no object behind,
 *    `/health?ready=1` answers 503; once Redis is back everything recovers.
 * 2. A private s3rver is stopped and restarted: submissions answer 500 with no job record left
 *    in Redis (database 10, flushed at start); once S3 is back everything recovers.
 *
 * Every wait polls with a deadline; no sleeps. Figures go to the reliability report
 * (test/support/reliability-report.ts).
 */
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { jobStatus, readyStatus, steadyTraffic, submit } from "../support/gateway-traffic.ts";
import { metricValue } from "../support/prometheus.ts";
import { reportReliability } from "../support/reliability-report.ts";
import { freePort, type RunningServer, startRedis, startS3, TEST_BUCKET } from "../support/servers.ts";
import { storesYaml } from "../support/stores-yaml.ts";

interface ErrorBody {
  error: { message: string; type: string };
}

let echo: FakeBackend;
let inference: InferenceBackend;
const running: GatewayProcess[] = [];
const servers: RunningServer[] = [];

beforeAll(async () => {
  [echo, inference] = await Promise.all([startBackend({ kind: "echo" }), startInferenceBackend()]);
});
afterAll(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
  await Promise.all(servers.splice(0).map((s) => s.stop()));
  await Promise.all([echo.close(), inference.close()]);
});

function services(): string {
  return `
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

async function bucketKeys(endpoint: string, bucket: string): Promise<string[]> {
  const client = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } });
  try {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
      for (const item of page.Contents ?? []) if (item.Key) keys.push(item.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  } finally {
    client.destroy();
  }
}

async function metricsOf(gw: GatewayProcess): Promise<string> {
  return await (await fetch(`${gw.url}/metrics`)).text();
}

describe("scenario 1: Redis stopped and restarted under steady traffic", () => {
  const BUCKET = "reliability-redis";

  it("serves sync requests, refuses jobs with 503 and no leftovers, and recovers without a restart", async () => {
    const port = await freePort();
    let redis = await startRedis(port);
    servers.push(redis);
    const gw = await startGateway(`
server:
  consumer_header: X-Consumer
${storesYaml({ bucket: BUCKET, redisAddr: redis.url })}
relay:
  embedded: true
${services()}`);
    running.push(gw);
    expect(await readyStatus(gw)).toBe(200);
    const endpoint = inject("s3Endpoint");
    const keysBefore = await bucketKeys(endpoint, BUCKET);

    const traffic = steadyTraffic(gw, "steady");
    // A job accepted before the outage completes.
    const before = await submit(gw, "before-outage");
    expect(before.status).toBe(202);
    const beforeId = ((await before.json()) as { job_id: string }).job_id;
    await waitUntil(async () => (await jobStatus(gw, beforeId)) === "completed", 20_000, () => gw.output().slice(-2000));
    const keysWithJob = await bucketKeys(endpoint, BUCKET);

    await waitUntil(() => traffic.sent >= 20, 10_000);
    const sentBeforeOutage = traffic.sent;
    await redis.stop();

    // While Redis is down: not ready, submissions refused with a clear error, sync traffic served.
    await waitUntil(async () => (await readyStatus(gw)) === 503, 10_000, () => "ready never went 503");
    const ready = (await (await fetch(`${gw.url}/health?ready=1`)).json()) as { status: string; checks: { kv: string; objects: string } };
    expect(ready.status).toBe("unavailable");
    expect(ready.checks.kv).toMatch(/^down/);
    expect(ready.checks.objects).toBe("ok");

    const refused: number[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await submit(gw, `during-outage-${i}`);
      refused.push(response.status);
      const body = (await response.json()) as ErrorBody;
      expect(typeof body.error.message).toBe("string");
      expect(body.error.message.length).toBeGreaterThan(0);
      expect(typeof body.error.type).toBe("string");
    }
    expect(refused).toEqual([503, 503, 503, 503, 503]);
    // Nothing half-created: the objects uploaded for the refused jobs were removed.
    expect(await bucketKeys(endpoint, BUCKET)).toEqual(keysWithJob);

    await waitUntil(() => traffic.sent >= sentBeforeOutage + 30, 15_000, () => "sync traffic stalled while Redis was down");
    const errorsDuringOutage = metricValue(await metricsOf(gw), "svc_ratelimit_errors_total", { service_type: "echo" });
    expect(errorsDuringOutage).toBeGreaterThan(0);

    // Redis comes back on the same port: the same gateway process recovers.
    const syncDuringOutage = traffic.sent - sentBeforeOutage;
    redis = await startRedis(port);
    servers.push(redis);
    await waitUntil(async () => (await readyStatus(gw)) === 200, 30_000, () => "the gateway never reconnected to Redis");
    const after = await submit(gw, "after-outage");
    expect(after.status).toBe(202);
    const afterId = ((await after.json()) as { job_id: string }).job_id;
    await waitUntil(async () => (await jobStatus(gw, afterId)) === "completed", 30_000, () => gw.output().slice(-2000));
    const sentAtRecovery = traffic.sent;
    await waitUntil(() => traffic.sent >= sentAtRecovery + 20, 10_000);
    const counts = await traffic.stop();

    // Every sync request got its answer, all of them 200: none failed, none lost.
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    expect(Object.fromEntries(counts)).toEqual({ 200: total });
    expect(gw.child.exitCode).toBeNull();
    expect(keysBefore.length).toBeLessThanOrEqual(keysWithJob.length);
    reportReliability({
      id: 1,
      scenario: "Redis stopped and restarted",
      load: "steady sync traffic (1 client) + job submissions, embedded relay",
      faults: "redis-server stopped, then restarted on the same port; gateway left running",
      requests: total + 2 + refused.length,
      lost: 0,
      duplicated: 0,
      errors: 0,
      expectedErrors: { count: refused.length, why: "job submissions answered 503 while Redis was down" },
      details: { sync_requests: total, sync_during_outage: syncDuringOutage, ratelimit_errors_counted: errorsDuringOutage, jobs_completed: 2 },
    });
  }, 120_000);
});

describe("scenario 2: object store stopped and restarted", () => {
  const DB = 10;

  it("answers 500 with nothing half-created while S3 is down, and recovers without a restart", async () => {
    const port = await freePort();
    let s3 = await startS3(port);
    servers.push(s3);
    const kv = createClient({ url: inject("redisUrl"), database: DB });
    await kv.connect();
    try {
      await kv.flushDb();
      const gw = await startGateway(`
server:
  consumer_header: X-Consumer
${storesYaml({ db: DB, bucket: TEST_BUCKET, s3Endpoint: s3.url })}
relay:
  embedded: true
${services()}`);
      running.push(gw);
      const jobKeys = async () => (await kv.keys("job:*")).sort();

      const before = await submit(gw, "s3-before");
      expect(before.status).toBe(202);
      const beforeId = ((await before.json()) as { job_id: string }).job_id;
      await waitUntil(async () => (await jobStatus(gw, beforeId)) === "completed", 20_000, () => gw.output().slice(-2000));
      const recordsBefore = await jobKeys();

      await s3.stop();
      await waitUntil(async () => (await readyStatus(gw)) === 503, 15_000, () => "ready never went 503 with S3 down");

      const refused: number[] = [];
      for (let i = 0; i < 5; i++) {
        const response = await submit(gw, `s3-during-${i}`);
        refused.push(response.status);
        const body = (await response.json()) as ErrorBody;
        expect(body.error.message.length).toBeGreaterThan(0);
        expect(typeof body.error.type).toBe("string");
      }
      expect(refused).toEqual([500, 500, 500, 500, 500]);
      // No job record for any refused submission; the queue did not grow.
      expect(await jobKeys()).toEqual(recordsBefore);
      expect(await kv.lLen("relay:whisper")).toBe(0);
      // Sync traffic does not need the object store.
      const sync = await fetch(`${gw.url}/v1/echo`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(sync.status).toBe(200);
      await sync.arrayBuffer();

      s3 = await startS3(port);
      servers.push(s3);
      await waitUntil(async () => (await readyStatus(gw)) === 200, 30_000, () => "the gateway never saw S3 come back");
      const after = await submit(gw, "s3-after");
      expect(after.status).toBe(202);
      const afterId = ((await after.json()) as { job_id: string }).job_id;
      await waitUntil(async () => (await jobStatus(gw, afterId)) === "completed", 30_000, () => gw.output().slice(-2000));
      expect(inference.runs.get("s3-after")).toBe(1);
      expect(inference.runs.get("s3-before")).toBe(1);
      for (let i = 0; i < 5; i++) expect(inference.runs.get(`s3-during-${i}`)).toBeUndefined();
      expect(gw.child.exitCode).toBeNull();
      reportReliability({
        id: 2,
        scenario: "Object store stopped and restarted",
        load: "job submissions + sync requests, embedded relay",
        faults: "s3rver stopped, then restarted on the same port; gateway left running",
        requests: 7 + 1,
        lost: 0,
        duplicated: 0,
        errors: 0,
        expectedErrors: { count: refused.length, why: "job submissions answered 500 while S3 was down, nothing half-created" },
        details: { half_created: 0, jobs_completed: 2 },
      });
    } finally {
      await kv.close();
    }
  }, 120_000);
});
