/**
 * Job-completion webhooks as a receiver meets them (docs/design.md#webhooks): real gateway and
 * relay processes on Redis and S3, and a webhook receiver running as a process of its own
 * (test/fixtures/webhook-receiver.ts). The receiver's callback URL says how it answers
 * each job (`?fail=N` first N deliveries get 500, `?status=S` then S).
 */
import { createHmac } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { S3ObjectStore } from "../../adapters/objects-s3/index.ts";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import type { ReceivedDelivery } from "../fixtures/webhook-receiver.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { TEST_BUCKET } from "../support/servers.ts";
import { type ReceiverProcess, startReceiverProcess } from "../support/webhook-receiver-process.ts";
import { storesYaml } from "../support/stores-yaml.ts";

const REDIS_DB = 5;
const SECRET = "whsec_e2e";
const RESULT = { text: "transcribed", words: 2 };

type Redis = ReturnType<typeof createClient>;
let redis: Redis;
let receiver: ReceiverProcess;
let backend: FakeBackend;

beforeAll(async () => {
  redis = createClient({ url: inject("redisUrl"), database: REDIS_DB });
  await redis.connect();
  await redis.flushDb();
  [receiver, backend] = await Promise.all([
    startReceiverProcess(),
    startBackend({ kind: "status", status: 200, body: JSON.stringify(RESULT) }),
  ]);
});

afterAll(async () => {
  await Promise.all([receiver?.stop(), backend?.close(), redis?.quit()]);
});

interface ConfigOptions {
  webhooks?: Record<string, string | number | boolean>;
  persistsResult?: boolean;
  embeddedRelay: boolean;
  model?: string;
}

function gatewayConfig(options: ConfigOptions): string {
  const webhooks = {
    signing_secret: SECRET,
    allow_private_networks: true,
    retry_backoff: "500ms",
    max_backoff: "1s",
    max_retries: 4,
    timeout: "5s",
    ...options.webhooks,
  };
  return `
${storesYaml({ db: REDIS_DB, bucket: TEST_BUCKET })}
lifecycle:
  persists_result: ${options.persistsResult ?? false}
webhooks: ${JSON.stringify(webhooks)}
relay:
  embedded: ${options.embeddedRelay}
services:
  - type: transcribe
    model: ${options.model ?? "whisper"}
    inference_url: ${backend.url}
`;
}

const running: GatewayProcess[] = [];

/** Runs a test body; a failure carries the tail of every process's log, to say what happened. */
async function explained(procs: () => GatewayProcess[], body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    const logs = procs().map((p, i) => `--- process ${i} (pid ${p.child.pid}) ---\n${p.output().split("\n").slice(-40).join("\n")}`);
    (error as Error).message += `\n${logs.join("\n")}`;
    throw error;
  }
}
async function start(yaml: string, role: "gateway" | "relay" = "gateway"): Promise<GatewayProcess> {
  const proc = await startGateway(yaml, { role });
  running.push(proc);
  return proc;
}
async function stopAll(): Promise<void> {
  await Promise.all(running.splice(0).map((p) => p.kill()));
}

async function submit(gw: GatewayProcess, callbackUrl: string): Promise<Response> {
  const form = new FormData();
  form.append("file", new Blob(["RIFF....WAVE"], { type: "audio/wav" }), "clip.wav");
  form.append("callback_url", callbackUrl);
  return await fetch(`${gw.url}/jobs/transcribe`, { method: "POST", body: form });
}

async function submitJob(gw: GatewayProcess, query = ""): Promise<string> {
  const response = await submit(gw, `${receiver.url}/hook${query}`);
  const body = (await response.json()) as { job_id: string };
  expect(response.status, JSON.stringify(body)).toBe(202);
  return body.job_id;
}

/** Polls the receiver until `ready` holds for the job's deliveries; returns them. */
async function deliveriesOf(jobId: string, ready: (list: ReceivedDelivery[]) => boolean, timeoutMs = 20_000): Promise<ReceivedDelivery[]> {
  let list: ReceivedDelivery[] = [];
  await waitUntil(async () => ready(list = await receiver.received(jobId)), timeoutMs, () => `deliveries of ${jobId}: ${JSON.stringify(list)}`);
  return list;
}

async function deadLetters(): Promise<Array<Record<string, unknown>>> {
  return (await redis.lRange("webhook:deadletter", 0, -1)).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Independent check of X-Svc-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>. */
function verifySignature(delivery: ReceivedDelivery): number {
  const header = String(delivery.headers["x-svc-signature"] ?? "");
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  expect(match, `signature header "${header}"`).not.toBeNull();
  const t = match![1];
  expect(match![2]).toBe(createHmac("sha256", SECRET).update(`${t}.${delivery.body}`).digest("hex"));
  return Number(t);
}

describe("webhooks from a standalone relay (gateway + relay process)", () => {
  let gw: GatewayProcess;

  beforeAll(async () => {
    const yaml = gatewayConfig({ embeddedRelay: false });
    gw = await start(yaml);
    await start(yaml, "relay");
  });
  afterAll(stopAll);

  it("POSTs body 2.7 with Content-Type, X-Job-ID and a signature a receiver can verify, then consumes the result", async () => {
    const jobId = await submitJob(gw);
    const [delivery] = await deliveriesOf(jobId, (list) => list.length === 1);
    expect(delivery.method).toBe("POST");
    expect(delivery.path).toBe("/hook");
    expect(delivery.headers["content-type"]).toBe("application/json");
    expect(delivery.headers["x-job-id"]).toBe(jobId);
    const body = JSON.parse(delivery.body) as Record<string, unknown>;
    expect(body).toEqual({
      job_id: jobId,
      service_type: "transcribe",
      status: "completed",
      result: RESULT,
      error: "",
      completed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
    });
    expect(Math.abs(Date.parse(String(body.completed_at)) - delivery.at)).toBeLessThan(30_000);
    const t = verifySignature(delivery);
    expect(Math.abs(t - delivery.at / 1000)).toBeLessThan(30);

    // persists_result=false: the delivery consumed the result: record and result object are gone.
    await waitUntil(async () => (await redis.exists(`job:${jobId}`)) === 0, 10_000, () => `job:${jobId} still stored`);
    const read = await fetch(`${gw.url}/jobs/transcribe/${jobId}`);
    expect(read.status).toBe(410);
    const objects = new S3ObjectStore({ endpoint: inject("s3Endpoint"), region: "us-east-1", accessKey: "S3RVER", secretKey: "S3RVER", bucket: TEST_BUCKET });
    try {
      expect(await objects.get(`jobs/${jobId}/result`)).toBeNull();
    } finally {
      await objects.close();
    }
  });

  it("retries 5xx on the backoff (500ms, then doubled and capped at 1s) with a fresh signature each time", async () => {
    const jobId = await submitJob(gw, "?fail=3");
    const list = await deliveriesOf(jobId, (l) => l.some((d) => d.answered === 200));
    expect(list.map((d) => d.answered)).toEqual([500, 500, 500, 200]);
    const gaps = list.slice(1).map((d, i) => d.at - list[i].at);
    const expected = [500, 1000, 1000];
    // The slack above stays under one backoff step: an uncapped third gap (2000) fails it.
    gaps.forEach((gap, i) => {
      expect(gap, `gap ${i + 1}: ${gaps.join(", ")} ms`).toBeGreaterThanOrEqual(expected[i] - 20);
      expect(gap, `gap ${i + 1}: ${gaps.join(", ")} ms`).toBeLessThan(expected[i] + 1000);
    });
    expect(new Set(list.map((d) => d.body)).size).toBe(1);
    const stamps = list.map(verifySignature);
    // 2.5 s apart at least, so the last `t` is at least 2 seconds later than the first.
    expect(stamps[3]).toBeGreaterThanOrEqual(stamps[0] + 2);
    await waitUntil(async () => (await redis.zScore("webhook:retries", jobId)) === null);
  });

  it("does not retry a 4xx answer", async () => {
    const jobId = await submitJob(gw, "?status=404");
    await deliveriesOf(jobId, (list) => list.length === 1);
    // A job answered 500 once, submitted after it, is retried after 500ms: by then a retry of the 404 would have come.
    const barrier = await submitJob(gw, "?fail=1");
    await deliveriesOf(barrier, (list) => list.length === 2);
    expect((await receiver.received(jobId)).map((d) => d.answered)).toEqual([404]);
    expect(await redis.zScore("webhook:retries", jobId)).toBeNull();
    expect(await redis.exists(`webhook:delivery:${jobId}`)).toBe(0);
    expect((await deadLetters()).filter((entry) => entry.job_id === jobId)).toEqual([]);
  });

  it("dead-letters the delivery after max_retries attempts in total", async () => {
    const jobId = await submitJob(gw, "?fail=100");
    let entries: Array<Record<string, unknown>> = [];
    await waitUntil(async () => (entries = (await deadLetters()).filter((e) => e.job_id === jobId)).length > 0, 30_000, () => "no dead letter");
    expect(entries).toEqual([
      {
        job_id: jobId,
        service_type: "transcribe",
        url: `${receiver.url}/hook?fail=100`,
        attempts: 4,
        failed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        last_error: "HTTP 500",
        status: "completed",
        // The exact notification, kept for a redelivery (POST /-/webhooks/deadletter/redeliver).
        body: (await receiver.received(jobId))[0]!.body,
      },
    ]);
    expect((await receiver.received(jobId)).map((d) => d.answered)).toEqual([500, 500, 500, 500]);
    expect(await redis.zScore("webhook:retries", jobId)).toBeNull();
  });
});

describe("durability", () => {
  afterAll(stopAll);

  it("delivers a pending retry after the gateway is SIGKILLed and restarted on Redis", () =>
    explained(() => running, async () => {
      const yaml = gatewayConfig({ embeddedRelay: true, persistsResult: true, webhooks: { retry_backoff: "2s", max_backoff: "2s" } });
      const first = await start(yaml);
      const jobId = await submitJob(first, "?fail=1");
      await deliveriesOf(jobId, (list) => list.length === 1);
      // Wait for the failed attempt to be rescheduled in Redis, then kill the process hard.
      await waitUntil(async () => JSON.parse((await redis.get(`webhook:delivery:${jobId}`)) ?? "{}").last_error === "HTTP 500");
      expect(await redis.zScore("webhook:retries", jobId)).not.toBeNull();
      await first.kill();

      const second = await start(yaml);
      const list = await deliveriesOf(jobId, (l) => l.length === 2);
      expect(list.map((d) => d.answered)).toEqual([500, 200]);
      expect(list[1].at - list[0].at).toBeGreaterThanOrEqual(2000 - 20);
      verifySignature(list[1]);
      await waitUntil(async () => /svc_webhook_deliveries_total\{result="delivered"\} 1\b/.test(await (await fetch(`${second.url}/metrics`)).text()));
      // persists_result=true: the delivery did not consume the result.
      const read = await fetch(`${second.url}/jobs/transcribe/${jobId}`);
      expect(read.status).toBe(200);
      expect(await read.json()).toMatchObject({ id: jobId, status: "completed", result: RESULT });
    }));
});

describe("two replicas", () => {
  afterAll(stopAll);

  it("deliver each of 100 jobs exactly once per attempt (one failure, one success each)", () =>
    explained(() => running, async () => {
      const yaml = gatewayConfig({ embeddedRelay: true });
      const replicas = await Promise.all([start(yaml), start(yaml)]);
      const ids = await Promise.all(Array.from({ length: 100 }, (_, i) => submitJob(replicas[i % 2], "?fail=1")));
      let all: ReceivedDelivery[] = [];
      const wanted = new Set(ids);
      await waitUntil(
        async () => {
          all = (await receiver.received()).filter((d) => wanted.has(String(d.headers["x-job-id"])));
          return all.filter((d) => d.answered === 200).length >= 100;
        },
        60_000,
        () => `${all.filter((d) => d.answered === 200).length} of 100 delivered`,
      );
      // Let any duplicate (a second claim of the same retry) arrive before counting.
      await waitUntil(async () => (await redis.zCard("webhook:retries")) === 0, 10_000);
      all = (await receiver.received()).filter((d) => wanted.has(String(d.headers["x-job-id"])));
      const perJob = new Map<string, number[]>();
      for (const d of all) perJob.set(String(d.headers["x-job-id"]), [...(perJob.get(String(d.headers["x-job-id"])) ?? []), d.answered]);
      expect(perJob.size).toBe(100);
      for (const [id, answers] of perJob) expect(answers, id).toEqual([500, 200]);
      expect((await deadLetters()).filter((e) => wanted.has(String(e.job_id)))).toEqual([]);
      const deliveredTotal = async () => {
        const counts = await Promise.all(
          replicas.map(async (gw) =>
            Number(/svc_webhook_deliveries_total\{result="delivered"\} (\d+)/.exec(await (await fetch(`${gw.url}/metrics`)).text())?.[1] ?? 0)
          ),
        );
        return counts[0] + counts[1];
      };
      // A replica counts a delivery once its store op taking it off the retry queue has answered,
      // a moment after the queue reads empty here: wait for the counters to catch up.
      let delivered = 0;
      await waitUntil(async () => (delivered = await deliveredTotal()) >= 100, 10_000, () => `${delivered} deliveries counted`);
      // Every first attempt failed, so these are all retries, each made by one replica or the other
      // (how they split depends on which polls first after a retry falls due).
      expect(delivered).toBe(100);
    }));
});

describe("callback_url refusals at submission (SSRF)", () => {
  let gw: GatewayProcess;

  beforeAll(async () => {
    // Its own model: a job it accepts is never run by the relays of the other tests.
    gw = await start(gatewayConfig({ embeddedRelay: false, model: "ssrf-check", webhooks: { allow_private_networks: false } }));
  });
  afterAll(stopAll);

  it.each([
    ["http://169.254.169.254/latest/meta-data/", /cloud metadata address, which is never allowed/],
    ["http://metadata.google.internal/computeMetadata/v1/", /cloud metadata service/],
    ["http://[fe80::1]/hook", /link-local/],
    ["http://127.0.0.1:9/hook", /loopback address; set webhooks\.allow_private_networks: true/],
    ["http://localhost:9/hook", /localhost \((127\.0\.0\.1|::1)\) is a loopback address/],
    ["http://[::ffff:127.0.0.1]/hook", /loopback/],
    ["http://10.0.0.8/hook", /private address/],
    ["http://2130706433/hook", /loopback/],
    ["https://user:secret@93.184.216.34/hook", /must not contain credentials/],
    ["ftp://93.184.216.34/hook", /http/],
  ])("refuses %s with a 400 saying why", async (url, reason) => {
    const response = await submit(gw, url);
    const body = (await response.json()) as { error: { message: string; type: string } };
    expect(response.status, JSON.stringify(body)).toBe(400);
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toMatch(reason);
  });

  it("accepts a public address", async () => {
    const response = await submit(gw, "https://93.184.216.34/hook");
    expect(response.status).toBe(202);
  });
});
