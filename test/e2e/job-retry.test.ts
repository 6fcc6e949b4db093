/**
 * services[].retry end to end: a real gateway process with its embedded relay (Node, or
 * Deno when the suite runs on Deno) on the suite's redis-server (database 16, not flushed:
 * every run uses model names of its own) and s3rver (bucket `job-retry-e2e`), and a
 * scripted fake inference backend. No sleeps: every wait polls with a deadline.
 */
import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { type ScriptedBackend, startScriptedBackend } from "../fixtures/scripted-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { storesYaml } from "../support/stores-yaml.ts";

const DB = 16;
const run = crypto.randomUUID().slice(0, 8);
/** Three attempts, 200 ms then 400 ms apart unless the backend asks for longer (up to 3 s). */
const RETRIED = `retried-${run}`;
/** No retry block: the spec's single attempt. */
const ONCE = `once-${run}`;

let backend: ScriptedBackend;
let gw: GatewayProcess;

beforeAll(async () => {
  backend = await startScriptedBackend();
  gw = await startGateway(`
${storesYaml({ db: DB, bucket: "job-retry-e2e" })}
relay:
  embedded: true
services:
  - type: asr
    model: ${RETRIED}
    inference_url: ${backend.url}
    operations: { run: ["/run"] }
    retry: { max_attempts: 3, backoff: 200ms, max_backoff: 3s }
  - type: asr
    model: ${ONCE}
    inference_url: ${backend.url}
    operations: { run: ["/run"] }
`);
});
afterAll(async () => {
  await gw?.kill();
  await backend.close();
});
afterEach(() => {
  backend.script([]);
});

interface JobView {
  status: string;
  attempts: number;
  result?: unknown;
  error?: string;
}

async function submit(model: string): Promise<string> {
  const form = new FormData();
  form.append("model", model);
  form.append("file", new Blob(["audio"]), "a.wav");
  const response = await fetch(`${gw.url}/jobs/asr`, { method: "POST", body: form });
  expect(response.status).toBe(202);
  return ((await response.json()) as { job_id: string }).job_id;
}

async function view(id: string): Promise<JobView> {
  const response = await fetch(`${gw.url}/jobs/asr/${id}`);
  expect(response.status).toBe(200);
  return (await response.json()) as JobView;
}

async function waitFor(id: string, check: (job: JobView) => boolean): Promise<JobView> {
  let last: JobView | undefined;
  await waitUntil(async () => check(last = await view(id)), 20_000, () => `job ${id} is ${JSON.stringify(last)}\n${gw.output()}`);
  return last!;
}

async function inRedis<T>(fn: (client: ReturnType<typeof createClient>) => Promise<T>): Promise<T> {
  const client = createClient({ url: inject("redisUrl"), database: DB });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

describe("async job retries (services[].retry)", () => {
  it("a job whose backend answers 503, then 429 with Retry-After, completes on the third attempt", async () => {
    backend.script([{ status: 503 }, { status: 429, headers: { "retry-after": "1" } }]);
    const id = await submit(RETRIED);
    const done = await waitFor(id, (job) => job.status === "completed");
    expect(done).toMatchObject({ status: "completed", attempts: 3, result: { ok: true, call: 3 } });
    expect(backend.calls).toBe(3);
    // The backoff after the first failure, then the backend's Retry-After (longer than the 400 ms backoff).
    expect(backend.arrivals[1] - backend.arrivals[0]).toBeGreaterThanOrEqual(200);
    expect(backend.arrivals[2] - backend.arrivals[1]).toBeGreaterThanOrEqual(1_000);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(metrics).toContain(`svc_relay_job_retries_total{model="${RETRIED}",reason="503"} 1`);
    expect(metrics).toContain(`svc_relay_job_retries_total{model="${RETRIED}",reason="429"} 1`);
    expect(metrics).toContain(`svc_relay_jobs_total{model="${RETRIED}",outcome="retried"} 2`);
  });

  it("without a retry policy a 503 fails the job after one attempt (the spec's behaviour)", async () => {
    backend.script([{ status: 503, body: "busy" }]);
    const id = await submit(ONCE);
    const failed = await waitFor(id, (job) => job.status === "failed");
    expect(failed).toMatchObject({ attempts: 1, error: "the backend answered HTTP 503: busy" });
    expect(backend.calls).toBe(1);
  });

  it("a 400 from the backend is final: one attempt, failed", async () => {
    backend.script([{ status: 400, body: "unreadable audio" }]);
    const id = await submit(RETRIED);
    const failed = await waitFor(id, (job) => job.status === "failed");
    expect(failed).toMatchObject({ attempts: 1, error: "the backend answered HTTP 400: unreadable audio" });
    expect(backend.calls).toBe(1);
  });

  it("a DELETE during the backoff cancels the job for good: the backend never sees it again", async () => {
    backend.script([{ status: 503 }]);
    const first = await submit(RETRIED);
    await waitFor(first, (job) => job.attempts === 1 && job.status === "pending");
    const cancel = await fetch(`${gw.url}/jobs/asr/${first}`, { method: "DELETE" });
    expect(cancel.status).toBe(202);
    expect(await cancel.json()).toEqual({ job_id: first, status: "cancelled" });
    expect(await inRedis((redis) => redis.zScore(`relay-retry:${RETRIED}`, first))).toBeNull();

    // A second job fails once too, so its retry is due after the first one's would have been:
    // once it has run again, a retry of the first would have run before it.
    backend.script([{ status: 503 }]);
    const second = await submit(RETRIED);
    expect(await waitFor(second, (job) => job.status === "completed")).toMatchObject({ attempts: 2 });
    expect(backend.calls).toBe(2);
    expect(await view(first)).toMatchObject({ status: "cancelled", attempts: 1 });
  });
});
