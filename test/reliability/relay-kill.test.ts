/**
 * Reliability, scenario 3: relays killed (SIGKILL) mid-job under load (docs/design.md#background-gc
 * and docs/design.md#webhooks). A gateway with the GC on (interval 1s, relay leases of 1s) and
 * three standalone relays (concurrency 4 each) on the suite's redis-server, database 11 (flushed
 * first), objects in this file's own bucket; then the same on the suite's Sentinel set (database
 * 11) and on a Redis Cluster of the file's own (test/support/scenario-redis.ts), each with a fresh
 * backend. 60 jobs (RELIABILITY_RELAY_JOBS) are submitted while the fake backend holds every
 * request; once all three relays are mid-job, two are killed with SIGKILL. The reaper must requeue
 * their jobs and the surviving relay finish everything: every job ends `completed` exactly once
 * (one `relay_job_finished` line across all relays), with its own result. A job may legitimately
 * run twice at the backend (once on a killed relay, once after the reap). No sleeps.
 *
 * 60 jobs is what CI runs: 12 are mid-job at the kill and 48 wait in the queue, so the reaper
 * requeues onto a queue the survivor is still working through, which is the case that could
 * lose or repeat a job. The run's time goes into submitting and reading jobs (each one an
 * upload to the object store), so more jobs (RELIABILITY_RELAY_JOBS=300, the published
 * figures in docs/reliability.md) lengthen the survivor's backlog without adding a property.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { readyStatus } from "../support/gateway-traffic.ts";
import { reportReliability } from "../support/reliability-report.ts";
import { openScenarioRedis, REDIS_TOPOLOGIES, type ScenarioRedis } from "../support/scenario-redis.ts";
import { storesYaml } from "../support/stores-yaml.ts";

const DB = 11;
const BUCKET = "reliability-relays";
const JOBS = Number(process.env.RELIABILITY_RELAY_JOBS ?? 60);
const CONCURRENCY = 4;

async function submit(gw: GatewayProcess, content: string): Promise<string> {
  const body = new FormData();
  body.append("file", new Blob([content]), "clip.wav");
  const response = await fetch(`${gw.url}/jobs/transcription`, { method: "POST", body });
  if (response.status !== 202) throw new Error(`expected 202, got ${response.status}: ${await response.text()}\n${gw.output().slice(-2000)}`);
  return ((await response.json()) as { job_id: string }).job_id;
}

function finishedLines(procs: GatewayProcess[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const proc of procs) {
    for (const line of proc.output().split("\n")) {
      if (!line.includes('"event":"relay_job_finished"')) continue;
      const { job_id: id, status } = JSON.parse(line) as { job_id: string; status: string };
      const key = `${id}:${status}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return counts;
}

describe.each(REDIS_TOPOLOGIES)("scenario 3: two of three relays killed mid-job, on $name", ({ topology }) => {
  let backend: InferenceBackend;
  let store: ScenarioRedis;
  const running: GatewayProcess[] = [];

  beforeAll(async () => {
    [backend, store] = await Promise.all([startInferenceBackend(), openScenarioRedis(topology, DB)]);
  });
  afterAll(async () => {
    backend?.release();
    await Promise.all(running.splice(0).map((p) => p.kill()));
    await store?.close();
    await backend?.close();
  });

  function config(): string {
    return `
${storesYaml({ bucket: BUCKET, redisYaml: store.yaml })}
relay:
  embedded: false
  lease_seconds: 1
  concurrency: ${CONCURRENCY}
lifecycle:
  persists_result: true
  gc: { enabled: true, interval: 1s, max_reap_attempts: 5 }
services:
  - type: transcription
    model: whisper
    inference_url: ${backend.url}
    operations: { transcribe: ["/v1/audio/transcriptions"] }
`;
  }

  it("completes every job exactly once with its own result", async () => {
    const yaml = config();
    const gw = await startGateway(yaml);
    running.push(gw);
    // A Sentinel or Cluster client first asks for the topology: submit once the store is ready.
    await waitUntil(async () => (await readyStatus(gw)) === 200, 15_000, () => gw.output().slice(-2000));
    const relays: GatewayProcess[] = [];
    for (let i = 0; i < 3; i++) {
      const relay = await startGateway(yaml, { role: "relay" });
      running.push(relay);
      relays.push(relay);
    }

    backend.hold();
    const ids = new Map<string, string>(); // job id -> content
    for (let batch = 0; batch < JOBS; batch += 10) {
      const contents = Array.from({ length: Math.min(10, JOBS - batch) }, (_, i) => `job-content-${batch + i}`);
      const submitted = await Promise.all(contents.map((content) => submit(gw, content)));
      submitted.forEach((id, i) => ids.set(id, contents[i]));
    }
    expect(ids.size).toBe(JOBS);

    // Every relay is mid-job: all 3 x CONCURRENCY requests wait at the backend.
    await waitUntil(() => backend.held === 3 * CONCURRENCY, 30_000, () => `held ${backend.held}:\n${relays.map((r) => r.output().slice(-1000)).join("\n")}`);
    const inFlightAtKill = new Set(backend.received.map((job) => job.content));
    await Promise.all([relays[0].kill(), relays[1].kill()]);
    backend.release();

    const statusOf = async (id: string) => await store.kv.hget(`job:${id}`, "status");
    let left = [...ids.keys()];
    await waitUntil(
      async () => {
        const statuses = await Promise.all(left.map(statusOf));
        left = left.filter((_, i) => statuses[i] !== "completed");
        return left.length === 0;
      },
      120_000,
      () => `${left.length} jobs not completed, e.g. ${left[0]} is ${left[0]}:\n${gw.output().slice(-2000)}\n${relays[2].output().slice(-2000)}`,
    );

    // Each job completed with its own result, read the way a user reads it.
    for (const [id, content] of ids) {
      const response = await fetch(`${gw.url}/jobs/transcription/${id}`);
      expect(response.status).toBe(200);
      const job = (await response.json()) as { status: string; result?: { content?: string } };
      expect(job.status).toBe("completed");
      expect(job.result?.content).toBe(content);
    }

    // Exactly one completion per job across all relays (log lines may trail the status).
    await waitUntil(() => [...ids.keys()].every((id) => (finishedLines(relays).get(`${id}:completed`) ?? 0) >= 1), 10_000);
    const finished = finishedLines(relays);
    const duplicatedCompletions = [...ids.keys()].filter((id) => (finished.get(`${id}:completed`) ?? 0) !== 1);
    expect(duplicatedCompletions).toEqual([]);
    expect([...finished.keys()].filter((key) => !key.endsWith(":completed"))).toEqual([]);

    // Nothing stuck or dead-lettered; every job ran at least once, only in-flight ones twice at most.
    expect(await store.kv.llen("relay:whisper")).toBe(0);
    expect(await store.kv.llen("relay:whisper:processing")).toBe(0);
    expect(await store.kv.llen("relay:whisper:deadletter")).toBe(0);
    const reruns = [...ids.values()].filter((content) => (backend.runs.get(content) ?? 0) > 1);
    for (const content of ids.values()) expect(backend.runs.get(content) ?? 0).toBeGreaterThanOrEqual(1);
    for (const content of reruns) {
      expect(inFlightAtKill.has(content)).toBe(true);
      expect(backend.runs.get(content)).toBe(2);
    }
    expect(relays[2].child.exitCode).toBeNull();
    reportReliability({
      id: 3,
      scenario: "Relays killed mid-job",
      redis: topology,
      load: `${JOBS} jobs, 3 standalone relays x ${CONCURRENCY} slots`,
      faults: "SIGKILL on 2 of 3 relays while every slot is mid-job",
      requests: JOBS,
      lost: 0,
      duplicated: duplicatedCompletions.length,
      errors: 0,
      details: { in_flight_at_kill: inFlightAtKill.size, reran_after_reap: reruns.length, backend_aborts: backend.aborts, completed: ids.size },
    });
  }, 180_000);
});
