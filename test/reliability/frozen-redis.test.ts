/**
 * Reliability, scenario 9: Redis freezes (SIGSTOP) instead of going away. The connection stays
 * open and nothing answers, as behind a network black hole. The test runs its own
 * redis-server (the suite's shared one is never stopped) and a gateway process on it, with
 * requests that carry a consumer so every one runs a rate-limit check in Redis.
 *
 * While frozen: sync answers keep coming, all 200 with the backend's body (limit checks fail
 * open, docs/design.md#failing-open), a job submission answers 503 (enqueue fails with the store,
 * docs/design.md#failing-open), `/health?ready=1` answers 503, and the repeated `limit_store_error`
 * lines are collapsed while the metric counts every one. After SIGCONT the same process counts
 * requests in Redis again and is ready, without a restart.
 *
 * Every wait polls with a deadline; figures (answers per second while frozen, time until
 * readiness said 503) go to the reliability report.
 */
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";
import { reportReliability } from "../support/reliability-report.ts";
import { type RunningServer, startRedis } from "../support/servers.ts";
import { storesYaml } from "../support/stores-yaml.ts";

const CONSUMER = "frozen";
const CLIENTS = 8;

let echo: FakeBackend;
let inference: InferenceBackend;
let redis: RunningServer;
let gw: GatewayProcess | undefined;
let frozen = false;

beforeAll(async () => {
  [echo, inference, redis] = await Promise.all([startBackend({ kind: "echo" }), startInferenceBackend(), startRedis()]);
});
afterAll(async () => {
  if (frozen) process.kill(redis.pid!, "SIGCONT");
  await gw?.kill();
  await Promise.all([redis.stop(), echo.close(), inference.close()]);
});

interface Answer {
  at: number;
  status: number;
  /** The `n` the echo backend saw in the body, or undefined when the body was not the echo. */
  echoed: number | undefined;
}

/** `CLIENTS` loops of sync requests until `stop()`: every answer with its time, status and echoed body. */
function traffic(target: GatewayProcess): { answers: Answer[]; stop(): Promise<void> } {
  const answers: Answer[] = [];
  let stopped = false;
  let sent = 0;
  const client = async () => {
    while (!stopped) {
      const n = ++sent;
      let status = -1;
      let echoed: number | undefined;
      try {
        const response = await fetch(`${target.url}/v1/echo`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-consumer": CONSUMER },
          body: JSON.stringify({ n }),
        });
        status = response.status;
        const text = await response.text();
        try {
          echoed = (JSON.parse((JSON.parse(text) as { body: string }).body) as { n?: number }).n;
        } catch {
          echoed = undefined;
        }
      } catch {
        status = -1;
      }
      answers.push({ at: Date.now(), status, echoed });
    }
  };
  const loops = Array.from({ length: CLIENTS }, client);
  return {
    answers,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

async function ready(target: GatewayProcess): Promise<{ status: number; body: { status: string; checks: Record<string, string> } }> {
  const response = await fetch(`${target.url}/health?ready=1`);
  return { status: response.status, body: (await response.json()) as { status: string; checks: Record<string, string> } };
}

async function metrics(target: GatewayProcess): Promise<string> {
  return await (await fetch(`${target.url}/metrics`)).text();
}

function submit(target: GatewayProcess): Promise<Response> {
  const form = new FormData();
  form.append("file", new Blob(["frozen"], { type: "audio/wav" }), "clip.wav");
  return fetch(`${target.url}/jobs/transcription`, { method: "POST", body: form, headers: { "x-consumer": CONSUMER } });
}

function linesOf(output: string, event: string): Record<string, unknown>[] {
  return output
    .split("\n")
    .filter((line) => line.includes(`"event":"${event}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("scenario 9: Redis frozen (SIGSTOP) under load", () => {
  it("keeps answering (limits fail open), says 503 on readiness, and recovers on SIGCONT without a restart", async () => {
    gw = await startGateway(`
server:
  consumer_header: X-Consumer
${storesYaml({ bucket: "reliability-frozen", redisYaml: `redis:\n  addr: ${JSON.stringify(redis.url)}\n  command_timeout: 500ms` })}
rate_limits:
  echo:
    "*": { rate: 1000000, period: 1h }
services:
  - type: echo
    model: echo
    inference_url: ${echo.url}
    operations: { run: [/v1/echo] }
  - type: transcription
    model: whisper
    inference_url: ${inference.url}
    operations: { transcribe: [/transcribe] }
`);
    const direct = createClient({ url: redis.url });
    await direct.connect();
    const counted = async () => Number((await direct.get(`rl:echo:${CONSUMER}`)) ?? 0);
    try {
      expect((await ready(gw)).status).toBe(200);
      const load = traffic(gw);
      // Past the warm-up, so the last second before the freeze is a fair baseline.
      await waitUntil(() => load.answers.length >= 400, 30_000, () => "no traffic before the freeze");
      expect(await counted()).toBeGreaterThan(0);
      const errorsBefore = metricValue(await metrics(gw), "svc_ratelimit_errors_total", { service_type: "echo" });

      process.kill(redis.pid!, "SIGSTOP");
      frozen = true;
      const frozenAt = Date.now();
      const answeredBefore = load.answers.length;

      // Readiness says 503 within its bound (polled: each probe must itself come back).
      let notReady: Awaited<ReturnType<typeof ready>> | undefined;
      await waitUntil(
        async () => {
          const probe = await ready(gw!);
          if (probe.status === 503) notReady = probe;
          return notReady !== undefined;
        },
        10_000,
        () => "readiness never said 503 with Redis frozen",
      );
      const readinessMs = Date.now() - frozenAt;
      expect(notReady!.body.status).toBe("unavailable");
      expect(notReady!.body.checks.kv).toMatch(/^down: Redis at 127\.0\.0\.1:\d+ (did not answer PING within 500 ms|is not answering)/);
      expect(notReady!.body.checks.objects).toBe("ok");

      // A job cannot be enqueued without Redis: 503 with an error body, not a hang.
      const job = await submit(gw);
      expect(job.status).toBe(503);
      const jobBody = (await job.json()) as { error: { message: string; type: string } };
      expect(jobBody.error.type).toBe("store_error");
      expect(jobBody.error.message).toMatch(/key-value store is unavailable/);

      // Sync answers keep coming while Redis stays frozen, past the point where the silent
      // connection is dropped and the client starts reconnecting to the frozen server.
      await waitUntil(
        () => load.answers.length >= answeredBefore + 300,
        30_000,
        () => `only ${load.answers.length - answeredBefore} answers while Redis was frozen`,
      );
      await waitUntil(() => gw!.output().includes('"event":"kv_store_connection_error"'), 30_000, () => "the silent connection was never dropped");
      const duringFreeze = load.answers.slice(answeredBefore);
      const frozenFor = Date.now() - frozenAt;
      const errorsDuring = metricValue(await metrics(gw), "svc_ratelimit_errors_total", { service_type: "echo" }) - errorsBefore;
      expect((await ready(gw)).status).toBe(503);

      process.kill(redis.pid!, "SIGCONT");
      frozen = false;
      const thawedAt = Date.now();
      await waitUntil(async () => (await ready(gw!)).status === 200, 30_000, () => "readiness never came back after SIGCONT");
      const readyAgainMs = Date.now() - thawedAt;
      // Requests are counted in Redis again by the same process.
      const countAfterThaw = await counted();
      await waitUntil(async () => (await counted()) >= countAfterThaw + 50, 20_000, () => "requests are not counted in Redis after SIGCONT");
      await load.stop();

      // Fail open: every answer, before, during and after the freeze, is the backend's 200.
      const statuses = new Map<number, number>();
      for (const answer of load.answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
      expect(Object.fromEntries(statuses)).toEqual({ 200: load.answers.length });
      expect(load.answers.every((answer) => typeof answer.echoed === "number")).toBe(true);
      // Every limit check that could not run was counted...
      expect(errorsDuring).toBeGreaterThanOrEqual(duringFreeze.length - CLIENTS);
      // ...while its log lines were collapsed: the first in full, then summaries with a count.
      const logged = linesOf(gw.output(), "limit_store_error");
      expect(logged.length).toBeGreaterThan(0);
      expect(logged.length).toBeLessThan(10);
      const summarized = logged.reduce((sum, line) => sum + (typeof line.repeated === "number" ? line.repeated : 1), 0);
      expect(summarized).toBeLessThanOrEqual(errorsDuring);
      expect(gw.child.exitCode).toBeNull();

      const answersPerSecond = Math.round((duringFreeze.length * 1000) / frozenFor);
      const lastSecondBefore = load.answers.slice(0, answeredBefore).filter((answer) => answer.at >= frozenAt - 1_000).length;
      reportReliability({
        id: 9,
        scenario: "Redis frozen (SIGSTOP) under load",
        load: `${CLIENTS} clients of sync requests with a consumer (rate limit checked in Redis) + a job submission`,
        faults: "redis-server stopped with SIGSTOP (connection open, no answers), then SIGCONT; gateway left running",
        requests: load.answers.length + 1,
        lost: 0,
        duplicated: 0,
        errors: load.answers.length - (statuses.get(200) ?? 0),
        expectedErrors: { count: 1, why: "the job submission answered 503 while Redis was frozen" },
        details: {
          answers_while_frozen: duringFreeze.length,
          frozen_ms: frozenFor,
          answers_per_second_before: lastSecondBefore,
          answers_per_second_while_frozen: answersPerSecond,
          readiness_503_after_ms: readinessMs,
          ready_again_after_sigcont_ms: readyAgainMs,
          limit_errors_counted: errorsDuring,
          limit_error_log_lines: logged.length,
        },
      });
    } finally {
      await direct.close().catch(() => {});
    }
  }, 120_000);
});
