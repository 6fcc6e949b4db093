/**
 * The plugin in a runtime: the `webhooks` service, the `job.terminal` subscription, result
 * consumption through the `jobs` service, the retry task and the metrics.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../../core/clock.ts";
import { createLogger, type Logger } from "../../../core/log.ts";
import { definePlugin, type GatewayServices } from "../../../core/plugins/types.ts";
import { jobKeys } from "../../../core/jobs/keys.ts";
import webhooks from "../../../plugins/webhooks/index.ts";
import { startTestRuntime, type TestRuntime } from "../../support/runtime.ts";

type JobRecord = Parameters<GatewayServices["jobs"]["consume"]>[0];

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.close();
});

const job = (overrides: Partial<JobRecord> = {}): JobRecord => ({
  id: "6f1c0c39-3d5e-4c55-9d7e-0d1b2b0e8a11",
  status: "completed",
  service_type: "transcribe",
  model: "whisper",
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:09.000Z",
  completed_at: "2026-01-01T00:00:09.000Z",
  priority: false,
  callback_url: "https://hooks.example.com/done",
  operation: "",
  path: "/transcribe",
  input_key: "in/x",
  filename: "a.wav",
  content_type: "audio/wav",
  size: 3,
  result_key: "out/x",
  ...overrides,
});

async function start(yaml: string, receiverStatus = 200, options: { log?: Logger; kv?: (kv: MemoryKv) => MemoryKv; withoutJobs?: boolean } = {}) {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 0, 10));
  const sent: Array<{ url: string; headers: Headers; body: unknown }> = [];
  const consumed: string[] = [];
  const stored = new Map<string, JobRecord>();
  // The part of the jobs service the webhooks plugin uses.
  const fakeJobs = definePlugin({
    name: "async-jobs", // stands in for the job plugin (webhooks declares it optional)
    roles: ["gateway", "relay"],
    setup(api) {
      api.provide(
        "jobs",
        {
          keys: jobKeys,
          get: async (id: string) => stored.get(id) ?? null,
          consume: async (record: JobRecord) => {
            consumed.push(record.id);
            return stored.delete(record.id);
          },
          readResult: async () => ({ text: "read from the store" }),
        } as unknown as GatewayServices["jobs"],
      );
    },
  });
  let webhookService!: GatewayServices["webhooks"];
  const started = await startTestRuntime(yaml, [...(options.withoutJobs ? [] : [fakeJobs]), webhooks], {
    role: "relay",
    clock,
    kv: options.kv ?? ((store) => store),
    log: options.log,
    fetch: () => Promise.reject(new Error("webhooks deliver through fetchPinned")),
    fetchPinned: async (input, _addresses, init = {}) => {
      sent.push({ url: String(input), headers: new Headers(init.headers), body: JSON.parse(String(init.body)) });
      return new Response(null, { status: receiverStatus });
    },
    lookupHost: async (host) => (host === "hooks.example.com" ? ["93.184.216.34"] : host === "intranet.example.com" ? ["10.1.2.3"] : []),
    // Stands for async-jobs' submission, which asks the webhooks service about callback_url.
    probeDependsOn: ["webhooks"],
    probe: (api) => void (webhookService = api.use("webhooks")),
  });
  runtimes.push(started);
  return { runtime: started.runtime, clock, kv: started.kv as MemoryKv, metrics: started.metrics, sent, consumed, stored, webhookService };
}

/** Waits for the event-driven (fire-and-forget) delivery to settle. */
async function settled(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("delivery did not settle within 2 s");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("webhooks plugin", () => {
  it("runs in the gateway and in relay processes", () => {
    expect(webhooks.roles).toEqual(["gateway", "relay"]);
  });

  it("validates callback URLs for the submission with the configured policy", async () => {
    const open = await start("webhooks:\n  allow_private_networks: true\n");
    expect(await open.webhookService.validateCallbackUrl("https://intranet.example.com/x")).toBeNull();
    expect(await open.webhookService.validateCallbackUrl("http://169.254.169.254/")).toMatch(/never allowed/);

    const strict = await start("");
    expect(await strict.webhookService.validateCallbackUrl("https://hooks.example.com/x")).toBeNull();
    expect(await strict.webhookService.validateCallbackUrl("https://intranet.example.com/x")).toMatch(/allow_private_networks/);
    expect(await strict.webhookService.validateCallbackUrl("gopher://hooks.example.com/")).toMatch(/http or https/);
  });

  it("notifies on job.terminal, reading a completed job's result when the event has none, and consumes it (persists_result=false)", async () => {
    const gw = await start("");
    const record = job();
    gw.stored.set(record.id, record);
    gw.runtime.emit("job.terminal", { job: record });
    await settled(() => gw.consumed.length === 1);
    expect(gw.sent).toEqual([
      {
        url: "https://hooks.example.com/done",
        headers: expect.any(Headers),
        body: {
          job_id: record.id,
          service_type: "transcribe",
          status: "completed",
          result: { text: "read from the store" },
          error: "",
          completed_at: "2026-01-01T00:00:09.000Z",
        },
      },
    ]);
    expect(gw.sent[0].headers.get("x-job-id")).toBe(record.id);
    expect(gw.stored.has(record.id)).toBe(false);
    expect(await gw.metrics.text()).toMatch(/svc_webhook_deliveries_total\{result="delivered"\} 1/);
  });

  it("keeps the result with persists_result=true, and never consumes failed jobs", async () => {
    const keep = await start("lifecycle:\n  persists_result: true\n");
    keep.runtime.emit("job.terminal", { job: job(), result: { text: "at hand" } });
    await settled(() => keep.sent.length === 1);
    expect(keep.sent[0].body).toMatchObject({ result: { text: "at hand" } });

    const failed = await start("");
    failed.runtime.emit("job.terminal", { job: job({ status: "failed", error: "backend returned 500", result_key: undefined }) });
    await settled(() => failed.sent.length === 1);
    expect(failed.sent[0].body).toMatchObject({ status: "failed", result: null, error: "backend returned 500" });

    await keep.runtime.close();
    await failed.runtime.close();
    expect(keep.consumed).toEqual([]);
    expect(failed.consumed).toEqual([]);
  });

  it("works without a jobs service: notifies on job.terminal, and its outbox sweep has nothing to do", async () => {
    const gw = await start("lifecycle:\n  persists_result: true\n", 200, { withoutJobs: true });
    gw.runtime.emit("job.terminal", { job: job(), result: { text: "at hand" } });
    await settled(() => gw.sent.length === 1);
    gw.clock.advance(3_600_000);
    await gw.runtime.runTaskNow("webhooks.outbox");
    await gw.runtime.close();
    expect(gw.sent).toHaveLength(1);
  });

  it("ignores jobs without a callback_url", async () => {
    const gw = await start("");
    gw.runtime.emit("job.terminal", { job: job({ callback_url: undefined }) });
    await gw.runtime.close();
    expect(gw.sent).toEqual([]);
  });

  it("retries from the schedule on its background task and reports the queue depth", async () => {
    const gw = await start("webhooks:\n  retry_backoff: 5s\n", 503);
    gw.runtime.emit("job.terminal", { job: job(), result: {} });
    await settled(() => gw.sent.length === 1);
    await gw.runtime.runTaskNow("webhooks.retries");
    expect(await gw.metrics.text()).toMatch(/svc_webhook_retry_queue_depth 1/);
    gw.clock.advance(5000);
    await gw.runtime.runTaskNow("webhooks.retries");
    await settled(() => gw.sent.length === 2);
  });

  it("pauses polling for a while after the store fails, logging once", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    let down = true;
    const flaky = (kv: MemoryKv) => {
      const run = kv.run.bind(kv);
      kv.run = ((...args: Parameters<MemoryKv["run"]>) => (down ? Promise.reject(new Error("connection refused")) : run(...args))) as MemoryKv["run"];
      return kv;
    };
    const gw = await start("", 200, { log, kv: flaky });
    const failures = () => lines.filter((l) => l.event === "webhook_retry_poll_failed").length;
    await gw.runtime.runTaskNow("webhooks.retries");
    await gw.runtime.runTaskNow("webhooks.retries");
    expect(failures()).toBe(1);
    down = false;
    gw.clock.advance(5000);
    await gw.runtime.runTaskNow("webhooks.retries");
    expect(failures()).toBe(1);
    expect(await gw.metrics.text()).toMatch(/svc_webhook_retry_queue_depth 0/);
  });
});
