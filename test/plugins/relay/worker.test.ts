/**
 * The relay worker on its own (memory KV, file objects, the fake backend): the concurrency
 * cap, giving jobs back when it stops, and stepping aside when another relay took a lease.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MemoryKv } from "../../../adapters/kv-memory/index.ts";
import { FsObjectStore } from "../../../adapters/objects-fs/index.ts";
import { randomIds, systemClock } from "../../../core/clock.ts";
import { loadConfig } from "../../../plugins/config.ts";
import { silentLogger } from "../../../core/log.ts";
import { Metrics } from "../../../core/metrics.ts";
import { Registry } from "../../../core/registry/registry.ts";
import { fieldsOf } from "../../../core/config/schema.ts";
import { jobLifetimeFields } from "../../../plugins/async-jobs/config.ts";
import { KvJobStore } from "../../../plugins/async-jobs/store.ts";
import type { JobRecord } from "../../../core/jobs/types.ts";
import { relayMetrics } from "../../../plugins/relay/metrics.ts";
import { RelaySlots } from "../../../plugins/relay/slots.ts";
import { RelayWorker } from "../../../plugins/relay/worker.ts";
import { type InferenceBackend, startInferenceBackend } from "../../fixtures/inference-backend.ts";
import { waitUntil } from "../../support/gateway-process.ts";

let backend: InferenceBackend;
beforeAll(async () => {
  backend = await startInferenceBackend();
});
afterAll(async () => {
  await backend.close();
});

interface Setup {
  kv: MemoryKv;
  jobs: KvJobStore;
  metrics: Metrics;
  worker: RelayWorker;
  control: AbortController;
  add(content: string): Promise<JobRecord>;
}

let setup: Setup;
let dir: string;

function build(options: { concurrency: number; leaseMs: number; kv?: MemoryKv; slots?: RelaySlots; moreModels?: number }): Setup {
  // `moreModels` chat services beside whisper: their queues are polled too.
  const more = Array.from({ length: options.moreModels ?? 0 }, (_, i) => `  - { type: chat, model: chat-${i}, inference_url: "${backend.url}" }\n`).join("");
  const { config } = loadConfig(
    `
services:
  - type: asr
    model: whisper
    inference_url: ${backend.url}
    operations: { run: ["/run"] }
${more}`,
    {},
  );
  const kv = options.kv ?? new MemoryKv();
  const objects = new FsObjectStore({ dir });
  const registry = new Registry(config.services);
  const jobs = new KvJobStore({
    kv,
    objects,
    registry,
    lifetimes: fieldsOf(config, jobLifetimeFields),
    jobs: config.jobs,
    clock: systemClock,
    ids: randomIds,
    log: silentLogger,
  });
  const metrics = new Metrics();
  const worker = new RelayWorker(
    jobs,
    {
      jobs,
      objects,
      fetch: (input, init) => globalThis.fetch(input, init),
      clock: systemClock,
      newId: () => randomIds.newId(),
      log: silentLogger,
      metrics: relayMetrics(metrics),
      emit: () => {},
      leaseMs: options.leaseMs,
      requestTimeoutMs: 60_000,
    },
    { concurrency: options.concurrency, leaseMs: options.leaseMs, drainGraceMs: 50, slots: options.slots },
    silentLogger,
  );
  return {
    kv,
    jobs,
    metrics,
    worker,
    control: new AbortController(),
    async add(content) {
      const id = randomIds.newId();
      const now = new Date().toISOString();
      const job: JobRecord = {
        id,
        status: "pending",
        service_type: "asr",
        model: "whisper",
        created_at: now,
        updated_at: now,
        priority: false,
        operation: "run",
        path: "/run",
        input_key: jobs.keys.inputObject(id),
        filename: "in.txt",
        content_type: "text/plain",
        size: content.length,
      };
      await objects.put(job.input_key, new TextEncoder().encode(content));
      await jobs.create(job);
      return job;
    },
  };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "gw-relay-"));
  backend.received.length = 0;
  backend.aborts = 0;
});
afterEach(async () => {
  backend.release();
  setup.control.abort();
  await setup.worker.close();
  await setup.kv.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("RelayWorker", () => {
  it("asks the store once per round whatever the number of models: an idle relay's cost does not grow with them", async () => {
    setup = build({ concurrency: 2, leaseMs: 60_000, moreModels: 40 });
    const claims: number[] = [];
    const run = setup.kv.run.bind(setup.kv);
    setup.kv.run = ((op, keys, args) => {
      if (op.name === "relayClaim") claims.push(keys.length / 3);
      return run(op, keys, args);
    }) as typeof setup.kv.run;
    await setup.worker.poll(setup.control.signal);
    // One claim over the 41 queues, not one per queue.
    expect(claims).toEqual([41]);

    const job = await setup.add("last in the list");
    await setup.worker.poll(setup.control.signal);
    await setup.worker.idle();
    expect((await setup.jobs.get(job.id))?.status).toBe("completed");
    // The job's claim, then the round that found every queue empty again.
    expect(claims).toEqual([41, 41, 41]);
  });

  it("runs at most `concurrency` jobs at once and gives running jobs back to the queue head when it stops", async () => {
    setup = build({ concurrency: 2, leaseMs: 60_000 });
    const jobs = [await setup.add("a"), await setup.add("b"), await setup.add("c")];
    backend.hold();
    void setup.worker.poll(setup.control.signal);
    await waitUntil(() => backend.held === 2);
    expect(setup.worker.busy).toBe(2);
    expect(await setup.kv.lrange("relay:whisper", 0, -1)).toEqual([jobs[2].id]);
    expect((await setup.jobs.get(jobs[0].id))?.status).toBe("processing");

    setup.control.abort();
    await setup.worker.close();
    expect(new Set(await setup.kv.lrange("relay:whisper", 0, -1))).toEqual(new Set(jobs.map((j) => j.id)));
    expect(await setup.kv.lrange("relay:whisper", -1, -1)).toEqual([jobs[2].id]);
    expect(await setup.kv.llen("relay:whisper:processing")).toBe(0);
    for (const job of jobs) expect((await setup.jobs.get(job.id))?.status).toBe("pending");
    await waitUntil(() => backend.aborts === 2);
    expect(await setup.metrics.text()).toContain('svc_relay_jobs_total{model="whisper",outcome="requeued"} 2');
  });

  it("retiring (hot reload) lets running jobs finish instead of requeueing them; the next worker shares the slots meanwhile", async () => {
    const slots = new RelaySlots();
    setup = build({ concurrency: 2, leaseMs: 60_000, slots });
    const old = setup;
    const jobs = [await old.add("a"), await old.add("b"), await old.add("c")];
    backend.hold();
    void old.worker.poll(old.control.signal);
    await waitUntil(() => backend.held === 2);

    // The reload: the old worker's task stops and it retires; a new worker on the same queues starts.
    old.control.abort();
    const retired = old.worker.retire();
    const next = build({ concurrency: 2, leaseMs: 60_000, kv: old.kv, slots });
    const polled = next.worker.poll(next.control.signal);
    // The process is at its concurrency with the old worker's jobs: the new one claims nothing yet.
    await waitUntil(() => slots.waiting === 1);
    expect(slots.running).toBe(2);
    expect(next.worker.busy).toBe(0);
    expect(await old.kv.lrange("relay:whisper", 0, -1)).toEqual([jobs[2].id]);

    backend.release();
    await retired;
    await polled;
    await next.worker.idle();
    for (const job of jobs) expect((await next.jobs.get(job.id))?.status).toBe("completed");
    // Every job reached the backend exactly once, and none was aborted or given back.
    expect(backend.received.length).toBe(3);
    expect(backend.aborts).toBe(0);
    expect(await old.metrics.text()).not.toContain('outcome="requeued"');
    expect(await old.metrics.text()).toContain('svc_relay_jobs_total{model="whisper",outcome="completed"} 2');
    expect(await next.metrics.text()).toContain('svc_relay_jobs_total{model="whisper",outcome="completed"} 1');
    await old.worker.close();
    setup = next;
  });

  it("stops a job whose lease another relay holds, without touching its record", async () => {
    setup = build({ concurrency: 1, leaseMs: 300 });
    const job = await setup.add("x");
    backend.hold();
    const polled = setup.worker.poll(setup.control.signal);
    await waitUntil(() => backend.held === 1);
    await setup.kv.set(setup.jobs.keys.lease(job.id), "another-relay");
    await polled;
    await setup.worker.idle();
    expect(await setup.metrics.text()).toContain('svc_relay_jobs_total{model="whisper",outcome="lost"} 1');
    expect((await setup.jobs.get(job.id))?.status).toBe("processing");
    expect(await setup.kv.lrange("relay:whisper:processing", 0, -1)).toEqual([job.id]);
  });

  it("skips a claimed job whose record is gone and removes its input", async () => {
    setup = build({ concurrency: 1, leaseMs: 60_000 });
    const job = await setup.add("gone");
    await setup.kv.del(setup.jobs.keys.record(job.id));
    await setup.worker.poll(setup.control.signal);
    await setup.worker.idle();
    expect(backend.received).toEqual([]);
    expect(await setup.kv.llen("relay:whisper:processing")).toBe(0);
    expect(await setup.metrics.text()).toContain('svc_relay_jobs_total{model="whisper",outcome="skipped"} 1');
  });
});
