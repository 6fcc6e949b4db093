/**
 * Background GC end to end: real gateway and relay processes (Node, or Deno when the suite
 * runs on Deno) against the suite's redis-server (database 8, emptied before each test)
 * and s3rver, with the fake inference backend. GC ticks every second and relay leases
 * last one second, so every wait is a few seconds; no sleeps, every wait polls with a
 * deadline.
 *
 * S3 objects go to this file's own bucket `gc-e2e` (the gateway creates it): the GC deletes
 * every job file whose record is missing from *its* database, which would include the
 * live files of other suites sharing a bucket.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { S3ObjectStore } from "../../adapters/objects-s3/index.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";
import { type RunningServer, startRedis } from "../support/servers.ts";

const DB = 8;
const BUCKET = "gc-e2e";
const QUEUE = "relay:whisper";
const PROCESSING = "relay:whisper:processing";

type Redis = ReturnType<typeof createClient>;

let backend: InferenceBackend;
let redis: Redis;
const running: GatewayProcess[] = [];
const servers: RunningServer[] = [];

beforeAll(async () => {
  backend = await startInferenceBackend();
  redis = createClient({ url: inject("redisUrl"), database: DB });
  await redis.connect();
});
afterAll(async () => {
  await redis.close();
  await backend.close();
});
beforeEach(async () => {
  backend.received.length = 0;
  backend.runs.clear();
  await redis.flushDb();
});
afterEach(async () => {
  backend.release();
  await Promise.all(running.splice(0).map((p) => p.kill()));
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

const s3 = () => new S3ObjectStore({ endpoint: inject("s3Endpoint"), region: "us-east-1", accessKey: "S3RVER", secretKey: "S3RVER", bucket: BUCKET });

async function objectExists(key: string): Promise<boolean> {
  const store = s3();
  try {
    const found = await store.get(key);
    await found?.body.cancel();
    return found !== null;
  } finally {
    await store.close();
  }
}

async function putObject(key: string): Promise<void> {
  const store = s3();
  try {
    await store.put(key, new TextEncoder().encode("stray"));
  } finally {
    await store.close();
  }
}

interface Options {
  gc?: string;
  redisAddr?: string;
  db?: number;
  pendingMaxAge?: string;
}

function config({ gc = "enabled: true", redisAddr = inject("redisUrl"), db = DB, pendingMaxAge = "" }: Options = {}): string {
  return `
redis:
  addr: ${JSON.stringify(redisAddr)}
  db: ${db}
  pending_max_age: "${pendingMaxAge}"
object_store:
  endpoint: ${JSON.stringify(inject("s3Endpoint"))}
  access_key: S3RVER
  secret_key: S3RVER
  bucket: ${BUCKET}
relay:
  embedded: false
  lease_seconds: 1
lifecycle:
  persists_result: true
  gc: { interval: 1s, ${gc} }
webhooks:
  allow_private_networks: true
  retry_backoff: 1s
services:
  - type: transcription
    model: whisper
    inference_url: ${backend.url}
    operations: { transcribe: ["/v1/audio/transcriptions"] }
`;
}

async function start(yaml: string, role: "gateway" | "relay" = "gateway"): Promise<GatewayProcess> {
  const proc = await startGateway(yaml, { role });
  running.push(proc);
  return proc;
}

async function submit(gw: GatewayProcess, content: string, fields: Record<string, string> = {}): Promise<string> {
  const body = new FormData();
  for (const [name, value] of Object.entries(fields)) body.append(name, value);
  body.append("file", new Blob([content]), "clip.wav");
  const response = await fetch(`${gw.url}/jobs/transcription`, { method: "POST", body });
  if (response.status !== 202) throw new Error(`expected 202, got ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { job_id: string }).job_id;
}

const status = (id: string) => redis.hGet(`job:${id}`, "status");

async function waitForStatus(id: string, wanted: string, gw: GatewayProcess, timeoutMs = 20_000): Promise<void> {
  await waitUntil(async () => (await status(id)) === wanted, timeoutMs, () => `job ${id} never became ${wanted}:\n${gw.output().slice(-3000)}`);
}

async function metric(gw: GatewayProcess, name: string, labels: Record<string, string>): Promise<number> {
  return metricValue(await (await fetch(`${gw.url}/metrics`)).text(), name, labels);
}

/** Aborted runs of a phase the log reports: identical lines are collapsed into a summary carrying `repeated` (core/log.ts). */
const abortLines = (gw: GatewayProcess, phase: string) =>
  gw
    .output()
    .split("\n")
    .filter((line) => line.includes('"event":"gc_phase_aborted"') && line.includes(`"phase":"${phase}"`))
    .reduce((sum, line) => sum + ((JSON.parse(line) as { repeated?: number }).repeated ?? 1), 0);

describe("phase 0: the lease reaper", () => {
  it("requeues the job of a relay killed with SIGKILL mid-job, and another relay completes it", async () => {
    const yaml = config();
    const gw = await start(yaml);
    const first = await start(yaml, "relay");
    backend.hold();
    const id = await submit(gw, "killed mid-job");
    await waitUntil(() => backend.held === 1, 30_000, () => `the first relay never called the backend:\n${first.output().slice(-2000)}`);
    expect(await status(id)).toBe("processing");

    const second = await start(yaml, "relay");
    await first.kill();
    backend.release();
    await waitForStatus(id, "completed", gw, 30_000);

    expect(backend.runs.get("killed mid-job")).toBe(2);
    expect(await redis.hGet(`job:${id}`, "reap_attempts")).toBe("1");
    expect(await redis.lLen(PROCESSING)).toBe(0);
    expect(await metric(gw, "svc_async_jobs_reaped_total", { model: "whisper", outcome: "requeued" })).toBe(1);
    // The relay logs after its store update, so the line may trail the status a little.
    await waitUntil(() => second.output().includes('"event":"relay_job_finished"'), 10_000, () => second.output().slice(-2000));
    await waitUntil(() => gw.output().includes('"event":"gc_job_requeued"'), 10_000);
  });

  it("fails and dead-letters a job after max_reap_attempts, deletes its input and sends its webhook", async () => {
    const deliveries: Array<{ job_id: string; status: string; error?: string }> = [];
    const receiver: Server = createServer((request, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        deliveries.push(JSON.parse(body) as (typeof deliveries)[number]);
        response.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const gw = await start(config({ gc: "enabled: true, max_reap_attempts: 1" }));
      const callback = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const id = await submit(gw, "doomed", { callback_url: callback });
      expect(await objectExists(`jobs/${id}/input`)).toBe(true);

      // Twice, a relay claims the job, starts it and dies before taking (or after losing) its lease.
      for (let round = 1; round <= 2; round++) {
        await waitUntil(async () => (await redis.lRange(QUEUE, 0, -1)).includes(id), 20_000, () => `round ${round}: job not back in the queue`);
        await redis.multi().lRem(QUEUE, 0, id).rPush(PROCESSING, id).hSet(`job:${id}`, "status", "processing").exec();
      }
      await waitForStatus(id, "failed", gw);

      expect(await redis.hGet(`job:${id}`, "error")).toMatch(/max_reap_attempts \(1\).*dead-letter/);
      expect(await redis.hGet(`job:${id}`, "reap_attempts")).toBe("2");
      expect(await redis.lRange("relay:whisper:deadletter", 0, -1)).toEqual([id]);
      expect(await redis.lLen(QUEUE)).toBe(0);
      expect(await redis.lLen(PROCESSING)).toBe(0);
      expect(await objectExists(`jobs/${id}/input`)).toBe(false);
      await waitUntil(() => deliveries.length > 0, 20_000, () => `no webhook:\n${gw.output().slice(-2000)}`);
      expect(deliveries[0]).toMatchObject({ job_id: id, status: "failed" });
      expect(await metric(gw, "svc_async_jobs_reaped_total", { model: "whisper", outcome: "requeued" })).toBe(1);
      expect(await metric(gw, "svc_async_jobs_reaped_total", { model: "whisper", outcome: "deadletter" })).toBe(1);
      const view = (await (await fetch(`${gw.url}/jobs/transcription/${id}`)).json()) as { status: string; error: string };
      expect(view.status).toBe("failed");
      expect(view.error).toContain("dead-letter");
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});

describe("phase 1: the stale-pending sweep", () => {
  it("fails pending jobs older than pending_max_age and deletes their inputs, with gc.enabled off", async () => {
    const gw = await start(config({ gc: "enabled: false", pendingMaxAge: "10m" }));
    const old = await submit(gw, "old");
    const fresh = await submit(gw, "fresh");
    await redis.hSet(`job:${old}`, "created_at", new Date(Date.now() - 60 * 60_000).toISOString());
    await waitForStatus(old, "failed", gw);

    expect(await redis.hGet(`job:${old}`, "error")).toContain("redis.pending_max_age (10m)");
    // The sweep marks the job failed, then deletes its input: a loaded machine can show the first before the second.
    await waitUntil(async () => !(await objectExists(`jobs/${old}/input`)), 10_000, () => `the input of ${old} is still stored`);
    expect(await redis.lRange(QUEUE, 0, -1)).toEqual([fresh]);
    expect(await status(fresh)).toBe("pending");
    expect(await objectExists(`jobs/${fresh}/input`)).toBe(true);
  });
});

describe("phases 2 and 3: orphan cleanup", () => {
  it("sweeps orphan files and queue entries, in configured and removed models, and leaves live jobs alone", async () => {
    const gw = await start(config({ gc: "enabled: true, orphan_min_age: 2s" }));
    const live = await submit(gw, "live");
    const gone = await submit(gw, "gone");
    await redis.del(`job:${gone}`);
    const strayProcessing = crypto.randomUUID();
    const strayRetired = crypto.randomUUID();
    await redis.rPush(PROCESSING, strayProcessing);
    await redis.rPush("relay:retired", strayRetired);
    const strayFile = `jobs/${crypto.randomUUID()}/result`;
    const foreignFile = "jobs/README.txt";
    await putObject(strayFile);
    await putObject(foreignFile);

    await waitUntil(
      async () => !(await objectExists(strayFile)) && !(await objectExists(`jobs/${gone}/input`)),
      20_000,
      () => `orphan files are still there:\n${gw.output().slice(-2000)}`,
    );
    await waitUntil(async () => (await redis.lLen(PROCESSING)) === 0 && (await redis.lLen("relay:retired")) === 0, 20_000);
    expect(await redis.lRange(QUEUE, 0, -1)).toEqual([live]);
    expect(await objectExists(`jobs/${live}/input`)).toBe(true);
    expect(await objectExists(foreignFile)).toBe(true);
    const swept = (model: string, state: string) => metric(gw, "svc_relay_queue_orphans_swept_total", { model, state });
    expect(await swept("whisper", "pending")).toBe(1);
    expect(await swept("whisper", "processing")).toBe(1);
    expect(await swept("retired", "pending")).toBe(1);
  });

  it("deletes nothing while the key-value store is down, and resumes when it is back", async () => {
    const privateRedis = await startRedis();
    servers.push(privateRedis);
    const gw = await start(config({ gc: "enabled: true, orphan_min_age: 0s", redisAddr: privateRedis.url, db: 0 }));
    await privateRedis.stop();
    // The object store still works: only an unreadable job store stands between this file and deletion.
    const stray = `jobs/${crypto.randomUUID()}/input`;
    await putObject(stray);
    const seen = { objects: abortLines(gw, "object-orphans"), queues: abortLines(gw, "queue-orphans") };
    // Two more aborted ticks: at least one started after the stray file was written.
    await waitUntil(
      () => abortLines(gw, "object-orphans") >= seen.objects + 2 && abortLines(gw, "queue-orphans") >= seen.queues + 2,
      30_000,
      () => `no aborted GC phases logged:\n${gw.output().slice(-3000)}`,
    );
    expect(await objectExists(stray)).toBe(true);

    servers.push(await startRedis(privateRedis.port));
    await waitUntil(async () => !(await objectExists(stray)), 30_000, () => `the GC did not resume:\n${gw.output().slice(-3000)}`);
  });
});

describe("three gateway replicas", () => {
  it("reap 50 expired leases exactly once each", async () => {
    const ids = Array.from({ length: 50 }, () => crypto.randomUUID());
    const now = new Date().toISOString();
    const seed = redis.multi();
    for (const id of ids) {
      seed.hSet(`job:${id}`, {
        id,
        status: "processing",
        service_type: "transcription",
        model: "whisper",
        created_at: now,
        updated_at: now,
        started_at: now,
        priority: "0",
        operation: "transcribe",
        path: "/v1/audio/transcriptions",
        input_key: `jobs/${id}/input`,
        filename: "clip.wav",
        content_type: "audio/wav",
        size: "5",
      });
      seed.pExpire(`job:${id}`, 60 * 60_000);
      // Claimed by relays that are gone: in the processing list, with no lease key.
      seed.rPush(PROCESSING, id);
    }
    await seed.exec();

    // Started together, so their first ticks (at start) race over the same entries.
    const yaml = config({ gc: "enabled: true, max_reap_attempts: 3" });
    const replicas = await Promise.all([start(yaml), start(yaml), start(yaml)]);
    await waitUntil(
      async () => (await redis.lLen(PROCESSING)) === 0 && (await redis.lLen(QUEUE)) === 50,
      30_000,
      () => replicas.map((r) => r.output().slice(-1000)).join("\n"),
    );

    const queue = await redis.lRange(QUEUE, 0, -1);
    expect(queue.slice().sort()).toEqual(ids.slice().sort());
    for (const id of ids) {
      expect(await redis.hmGet(`job:${id}`, ["status", "reap_attempts"])).toEqual(["pending", "1"]);
    }
    const reaped = async () => {
      const counts = await Promise.all(replicas.map((r) => metric(r, "svc_async_jobs_reaped_total", { model: "whisper", outcome: "requeued" })));
      return counts.reduce((sum, n) => sum + n, 0);
    };
    await waitUntil(async () => (await reaped()) >= 50, 10_000);
    expect(await reaped()).toBe(50);
    // Log lines travel through a pipe: wait for all of them, then check none is extra.
    const logged = () =>
      replicas.map((r) => r.output().split("\n").filter((line) => line.includes('"event":"gc_job_requeued"')).length).reduce((sum, n) => sum + n, 0);
    await waitUntil(() => logged() >= 50, 10_000);
    expect(logged()).toBe(50);
  });
});
