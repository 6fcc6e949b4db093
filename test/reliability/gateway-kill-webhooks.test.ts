/**
 * Reliability, scenario 4: the gateway is killed (SIGKILL) with webhook retries pending
 * (docs/design.md#delivery-rules: a restart does not drop pending retries). One gateway process
 * with its embedded relay and the GC on, on the suite's redis-server (database 12, flushed first)
 * and s3rver; a webhook receiver process (test/fixtures/webhook-receiver.ts) that fails the first
 * 0-3 deliveries of each job with a 500, then answers 200. Then the same on the suite's Sentinel
 * set (database 12) and on a Redis Cluster of the file's own (test/support/scenario-redis.ts),
 * each topology with a fresh backend and receiver.
 *
 * 30 jobs run to their end and make their inline delivery (some delivered, most with a retry
 * scheduled 1s later, the next ones 2s apart: short, so the deliveries after the restart take
 * seconds, long enough that most are still scheduled at the kill); 10 more are submitted while
 * the backend holds every request, so 4 are mid-job. Then the gateway is SIGKILLed and started
 * again on the same stores. Every job must end completed with its notification acknowledged
 * (2xx) exactly once, carrying its own result.
 *
 * What "once" can mean after a SIGKILL: an attempt the receiver answered 2xx while the dead
 * process had not yet recorded the answer is sent again (at-least-once; X-Job-ID is the
 * notification's id for a receiver to drop such a repeat). Such a resend is told apart from the
 * state frozen at the kill (the delivery still in the retry schedule) and reported; a 2xx
 * repeat of a delivery the store had already finished is a duplicate and fails the test.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import type { ReceivedDelivery } from "../fixtures/webhook-receiver.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { reportReliability } from "../support/reliability-report.ts";
import { type ReceiverProcess, startReceiverProcess } from "../support/webhook-receiver-process.ts";
import { openScenarioRedis, REDIS_TOPOLOGIES, type ScenarioRedis } from "../support/scenario-redis.ts";
import { storesYaml } from "../support/stores-yaml.ts";

const DB = 12;
const BUCKET = "reliability-webhooks";
const SETTLED_JOBS = 30;
const HELD_JOBS = 10;
const CONCURRENCY = 4;

interface StoredDelivery {
  attempts: number;
  last_error?: string;
}

const jobOf = (delivery: ReceivedDelivery) => String(delivery.headers["x-job-id"] ?? "");
const acknowledged = (delivery: ReceivedDelivery) => delivery.answered >= 200 && delivery.answered < 300;

describe.each(REDIS_TOPOLOGIES)("scenario 4: gateway killed with webhook retries pending, on $name", ({ topology }) => {
  let backend: InferenceBackend;
  let receiver: ReceiverProcess;
  let store: ScenarioRedis;
  const running: GatewayProcess[] = [];

  beforeAll(async () => {
    [backend, receiver, store] = await Promise.all([startInferenceBackend(), startReceiverProcess(), openScenarioRedis(topology, DB)]);
  });
  afterAll(async () => {
    backend?.release();
    await Promise.all(running.splice(0).map((p) => p.kill()));
    await Promise.all([store?.close(), receiver?.stop(), backend?.close()]);
  });

  function config(): string {
    return `
${storesYaml({ bucket: BUCKET, redisYaml: store.yaml })}
relay:
  embedded: true
  lease_seconds: 2
  concurrency: ${CONCURRENCY}
lifecycle:
  persists_result: true
  gc: { enabled: true, interval: 1s, max_reap_attempts: 5 }
webhooks:
  allow_private_networks: true
  retry_backoff: 1s
  max_backoff: 2s
  max_retries: 8
  timeout: 2s
services:
  - type: transcription
    model: whisper
    inference_url: ${backend.url}
    operations: { transcribe: ["/v1/audio/transcriptions"] }
`;
  }

  async function submit(gw: GatewayProcess, content: string, failures: number): Promise<string> {
    const body = new FormData();
    body.append("file", new Blob([content]), "clip.wav");
    body.append("callback_url", `${receiver.url}/hook?fail=${failures}`);
    const response = await fetch(`${gw.url}/jobs/transcription`, { method: "POST", body });
    if (response.status !== 202) throw new Error(`expected 202, got ${response.status}: ${await response.text()}`);
    return ((await response.json()) as { job_id: string }).job_id;
  }

  async function deliveryRecords(ids: string[]): Promise<Map<string, StoredDelivery>> {
    const texts = await store.kv.mget(ids.map((id) => `webhook:delivery:${id}`));
    const records = new Map<string, StoredDelivery>();
    texts.forEach((text, i) => {
      if (text !== null) records.set(ids[i], JSON.parse(text) as StoredDelivery);
    });
    return records;
  }

  /** One job's state across the stores: its status, delivery record, retry slot, outbox entry and queue. */
  async function where(id: string): Promise<string> {
    const [status, delivery, retryAt, outboxAt, queued, processing, lease] = await Promise.all([
      store.kv.hget(`job:${id}`, "status"),
      store.kv.get(`webhook:delivery:${id}`),
      store.kv.zscore("webhook:retries", id),
      store.kv.zscore("jobs:notify-outbox", id),
      store.kv.lrange("relay:whisper", 0, -1),
      store.kv.lrange("relay:whisper:processing", 0, -1),
      store.kv.get(`relay-lease:${id}`),
    ]);
    return `${id}: status ${status}, delivery ${delivery}, retry at ${retryAt}, outbox at ${outboxAt}, queued ${queued.includes(id)}, ` +
      `processing ${processing.includes(id)}, lease ${lease}`;
  }

  it("delivers every notification after the restart, none acknowledged twice", async () => {
    const yaml = config();
    const first = await startGateway(yaml);
    running.push(first);
    const contents = new Map<string, string>(); // job id -> content

    // 30 jobs run to their end; each makes its inline attempt (fail=0 ones are delivered there).
    const settledIds = await Promise.all(
      Array.from({ length: SETTLED_JOBS }, async (_, i) => {
        const id = await submit(first, `settled-${i}`, i % 4);
        contents.set(id, `settled-${i}`);
        return id;
      }),
    );
    // Settled in the store: delivered (record gone after a 2xx) or rescheduled after a 500.
    await waitUntil(
      async () => {
        const [records, received] = await Promise.all([deliveryRecords(settledIds), receiver.received()]);
        const delivered = new Set(received.filter(acknowledged).map(jobOf));
        return settledIds.every((id) => (records.get(id)?.last_error !== undefined) || (delivered.has(id) && !records.has(id)));
      },
      30_000,
      () => `the first ${SETTLED_JOBS} jobs did not settle:\n${first.output().slice(-2000)}`,
    );

    // 10 more while the backend holds every request: 4 are mid-job, 6 wait in the queue.
    backend.hold();
    const heldIds = await Promise.all(
      Array.from({ length: HELD_JOBS }, async (_, i) => {
        const id = await submit(first, `held-${i}`, (i % 3) + 1);
        contents.set(id, `held-${i}`);
        return id;
      }),
    );
    await waitUntil(() => backend.held === CONCURRENCY, 15_000, () => `held ${backend.held}:\n${first.output().slice(-2000)}`);
    await first.kill();

    // The state the kill left, frozen until the next process starts.
    const ids = [...settledIds, ...heldIds];
    const scheduledAtKill = new Set(await store.kv.zrangeByScore("webhook:retries", -Infinity, Infinity));
    const receivedAtKill = await receiver.received();
    const acknowledgedAtKill = new Set(receivedAtKill.filter(acknowledged).map(jobOf));
    const statusesAtKill = await Promise.all(ids.map((id) => store.kv.hget(`job:${id}`, "status")));
    expect(scheduledAtKill.size).toBeGreaterThan(0);
    expect(acknowledgedAtKill.size).toBeGreaterThan(0);
    // No completed job was left without its notification: delivered, or a delivery stored.
    const recordsAtKill = await deliveryRecords(ids);
    const unnotified = ids.filter((id, i) => statusesAtKill[i] === "completed" && !acknowledgedAtKill.has(id) && !recordsAtKill.has(id));
    expect(unnotified).toEqual([]);
    const processingAtKill = statusesAtKill.filter((status) => status === "processing").length;

    backend.release();
    const second = await startGateway(yaml);
    running.push(second);

    let received: ReceivedDelivery[] = [];
    let missing = "";
    const waitStarted = Date.now();
    await waitUntil(
      async () => {
        received = await receiver.received();
        const delivered = new Set(received.filter(acknowledged).map(jobOf));
        const undelivered = ids.filter((id) => !delivered.has(id));
        // Where each undelivered job stands, and whether the gateway still answers, for the failure message.
        // Asked only once the wait is long, when it looks stuck: a hung process and a lost job read alike from outside.
        const health = undelivered.length > 0 && Date.now() - waitStarted > 60_000
          ? await fetch(`${second.url}/health`, { signal: AbortSignal.timeout(2_000) }).then((r) => `HTTP ${r.status}`, (e: Error) => e.message)
          : "not asked";
        missing = [`gateway /health: ${health}`, ...(await Promise.all(undelivered.map(where)))].join("\n");
        // An acknowledged delivery leaves the schedule, then its record goes (two commands).
        return undelivered.length === 0 && (await store.kv.zcard("webhook:retries")) === 0 && (await store.keys("webhook:delivery:")).length === 0;
      },
      // The suite's load (three files at once on 2 cores) has stretched this past 90 s.
      150_000,
      () => `not delivered (${missing.split("\n").length - 1} of ${ids.length}):\n${missing}\n${second.output().slice(-3000)}`,
    );
    // The schedule is empty: no attempt is under way or due, so every delivery there will be is in.
    received = await receiver.received();

    const acknowledgements = new Map<string, ReceivedDelivery[]>();
    for (const delivery of received.filter(acknowledged)) acknowledgements.set(jobOf(delivery), [...(acknowledgements.get(jobOf(delivery)) ?? []), delivery]);
    const lost = ids.filter((id) => !acknowledgements.has(id));
    // Acknowledged twice: a resend is at-least-once only when the store still held the delivery at the kill.
    const twice = ids.filter((id) => (acknowledgements.get(id)?.length ?? 0) > 1);
    const resentUnrecordedAck = twice.filter((id) => acknowledgedAtKill.has(id) && scheduledAtKill.has(id) && acknowledgements.get(id)!.length === 2);
    const duplicated = twice.filter((id) => !resentUnrecordedAck.includes(id));
    expect(lost).toEqual([]);
    expect(duplicated).toEqual([]);

    // Each notification carries its own job's result; nothing was dead-lettered or left behind.
    for (const id of ids) {
      const [delivery] = acknowledgements.get(id)!;
      const body = JSON.parse(delivery.body) as { job_id: string; status: string; result: { content?: string } };
      expect(body.job_id).toBe(id);
      expect(body.status).toBe("completed");
      expect(body.result.content).toBe(contents.get(id));
    }
    expect(await store.kv.llen("webhook:deadletter")).toBe(0);
    expect(await store.keys("webhook:delivery:")).toEqual([]);

    // Every job is stored completed with its own result, read the way a user reads it.
    for (const [id, content] of contents) {
      const response = await fetch(`${second.url}/jobs/transcription/${id}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ id, status: "completed", result: { content } });
    }
    expect(await store.kv.llen("relay:whisper")).toBe(0);
    expect(await store.kv.llen("relay:whisper:processing")).toBe(0);
    expect(second.child.exitCode).toBeNull();

    const retriedAfterRestart = new Set(received.slice(receivedAtKill.length).map(jobOf));
    reportReliability({
      id: 4,
      scenario: "Gateway killed with webhook retries pending",
      redis: topology,
      load: `${ids.length} jobs with callbacks, receiver fails the first 0-3 attempts per job`,
      faults: `SIGKILL on the gateway (${scheduledAtKill.size} deliveries in the retry schedule, ${processingAtKill} jobs mid-run), restart`,
      requests: ids.length + received.length,
      lost: lost.length,
      duplicated: duplicated.length,
      errors: 0,
      details: {
        webhook_attempts: received.length,
        acknowledged_before_kill: acknowledgedAtKill.size,
        jobs_notified_after_restart: retriedAfterRestart.size,
        resent_unrecorded_ack: resentUnrecordedAck.length,
        backend_runs: backend.received.length,
      },
    });
  }, 240_000);
});
