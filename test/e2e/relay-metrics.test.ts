/**
 * A standalone relay's own listener (`relay.metrics_addr`): in the production layout (Redis +
 * S3, `relay.embedded: false`) the relay counts its jobs and the webhooks it sends in its own
 * registry, which it serves at GET /metrics next to GET /health. Real gateway and relay
 * processes, the suite's redis-server (database 9) and s3rver, a fake inference backend and a
 * webhook receiver process. No sleeps: every wait polls with a deadline.
 */
import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { exitCode, type GatewayProcess, onDeno, startGateway, type StartOptions, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";
import { freePort, TEST_BUCKET } from "../support/servers.ts";
import { storesYaml } from "../support/stores-yaml.ts";
import { type ReceiverProcess, startReceiverProcess } from "../support/webhook-receiver-process.ts";

const REDIS_DB = 9;

let receiver: ReceiverProcess;
let backend: FakeBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  const redis = createClient({ url: inject("redisUrl"), database: REDIS_DB });
  await redis.connect();
  await redis.flushDb();
  await redis.quit();
  [receiver, backend] = await Promise.all([startReceiverProcess(), startBackend({ kind: "status", status: 200, body: JSON.stringify({ text: "ok" }) })]);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
});
afterAll(async () => {
  await Promise.all([receiver?.stop(), backend?.close()]);
});

/** The shared config; each process renders `{{PORT}}` with a port of its own, so the relay's metrics listener is at its `url`. */
function config(metricsAddr = '"127.0.0.1:{{PORT}}"'): string {
  return `
${storesYaml({ db: REDIS_DB, bucket: TEST_BUCKET })}
webhooks: { allow_private_networks: true }
relay:
  embedded: false
  metrics_addr: ${metricsAddr}
services:
  - type: transcribe
    model: whisper
    inference_url: ${backend.url}
`;
}

async function start(yaml: string, options: StartOptions = {}): Promise<GatewayProcess> {
  const proc = await startGateway(yaml, options);
  running.push(proc);
  return proc;
}

/** Starts a relay and waits until its metrics listener answers /health. */
async function startRelay(yaml: string): Promise<GatewayProcess> {
  const relay = await start(yaml, { role: "relay" });
  await waitUntil(
    async () => {
      if (relay.child.exitCode !== null) throw new Error(`relay exited with ${relay.child.exitCode}:\n${relay.output()}`);
      try {
        return (await fetch(`${relay.url}/health`)).ok;
      } catch {
        return false;
      }
    },
    30_000,
    () => `relay did not answer /health:\n${relay.output()}`,
  );
  return relay;
}

async function scrape(proc: GatewayProcess): Promise<string> {
  const response = await fetch(`${proc.url}/metrics`);
  expect(response.status).toBe(200);
  return await response.text();
}

describe("a standalone relay with relay.metrics_addr", () => {
  it("serves its job and webhook metrics at /metrics, and /health with readiness", async () => {
    const yaml = config();
    const gw = await start(yaml);
    const relay = await startRelay(yaml);

    const form = new FormData();
    form.append("file", new Blob(["RIFF....WAVE"], { type: "audio/wav" }), "clip.wav");
    form.append("callback_url", `${receiver.url}/hook`);
    const submitted = await fetch(`${gw.url}/jobs/transcribe`, { method: "POST", body: form });
    const { job_id: jobId } = (await submitted.json()) as { job_id: string };
    expect(submitted.status).toBe(202);
    await waitUntil(async () => (await receiver.received(jobId)).length === 1, 20_000, () => `no delivery for ${jobId}:\n${relay.output()}`);

    // The relay counts the delivery once the receiver's answer is in: poll until it shows.
    let text = "";
    await waitUntil(async () => metricValue(text = await scrape(relay), "svc_webhook_deliveries_total", { result: "delivered" }) === 1, 10_000, () => text);
    const response = await fetch(`${relay.url}/metrics`);
    expect(response.headers.get("content-type")).toContain("text/plain");
    expect(text).toContain('svc_relay_jobs_total{model="whisper",outcome="completed"} 1');
    expect(text).toContain('svc_webhook_deliveries_total{result="delivered"} 1');
    expect(metricValue(text, "svc_relay_inference_duration_seconds_count", { model: "whisper" })).toBe(1);
    // The gateway ran neither the job nor the webhook: its registry has neither.
    const gatewayText = await scrape(gw);
    expect(metricValue(gatewayText, "svc_relay_jobs_total", { model: "whisper", outcome: "completed" })).toBe(0);
    expect(metricValue(gatewayText, "svc_webhook_deliveries_total", { result: "delivered" })).toBe(0);

    expect(await (await fetch(`${relay.url}/health`)).json()).toEqual({ status: "ok" });
    const ready = await fetch(`${relay.url}/health?ready=1`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ok", checks: { kv: "ok", objects: "ok" } });
    // Only the two endpoints: the gateway's API is not served by a relay.
    const other = await fetch(`${relay.url}/jobs/transcribe/${jobId}`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ error: { message: `no route for GET /jobs/transcribe/${jobId}`, type: "not_found_error", code: "no_route" } });

    // SIGTERM closes the listener too: the relay stops cleanly.
    const code = await relay.stop();
    // Deno's node:child_process reports the signal it sent instead of the exit code.
    if (!onDeno) expect(code).toBe(0);
    expect(relay.output()).toContain('"event":"stopped"');
  });

  it("takes RELAY_METRICS_ADDR over relay.metrics_addr, and refuses one that is not an address", async () => {
    const yaml = config('""');
    const gw = await start(yaml);
    const port = await freePort();
    const relay = await start(yaml, { role: "relay", env: { RELAY_METRICS_ADDR: `127.0.0.1:${port}` } });
    await waitUntil(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.ok === true, 30_000, () => relay.output());
    expect(relay.output()).toContain(`"event":"metrics_listening"`);
    expect(metricValue(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), "svc_relay_jobs_total", { model: "whisper", outcome: "completed" }))
      .toBe(0);

    const bad = await start(yaml, { role: "relay", env: { RELAY_METRICS_ADDR: "nowhere" } });
    expect(await exitCode(bad)).toBe(1);
    expect(bad.output()).toContain('cannot start: RELAY_METRICS_ADDR (environment): "nowhere" is not host:port or :port');

    const taken = await start(yaml, { role: "relay", env: { RELAY_METRICS_ADDR: `127.0.0.1:${gw.port}` } });
    expect(await exitCode(taken)).toBe(1);
    expect(taken.output()).toContain(`cannot start: cannot listen on 127.0.0.1:${gw.port}: the port ${gw.port} is already in use by another process`);
    expect(taken.output()).toContain("(relay.metrics_addr, or the RELAY_METRICS_ADDR environment variable)");
    // A relay that cannot listen took no job: its tasks start only once it listens.
    expect(taken.output()).not.toContain('"event":"gateway_started"');
  });
});
