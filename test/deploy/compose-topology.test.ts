/**
 * deploy/compose.yaml's topology run as processes (no container engine here): its two gateway
 * replicas and its relay, each started with the environment compose would give it and the
 * config file it mounts (deploy/config.yaml itself), on the suite's redis-server and s3rver in
 * place of its `redis` and `minio` containers. A job submitted on one replica is read on the
 * other once the relay ran it. The only substitutions are the container addresses and
 * credentials (`redis:6379`, `http://minio:9000`, MinIO's keys), the listen ports (each
 * container has its own network; the processes share one host) and a Redis database of the
 * test's own (REDIS_DB, which the config reads).
 */
import { randomBytes } from "node:crypto";
import { posix } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { type GatewayProcess, repoRoot, startGateway, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";
import { freePort } from "../support/servers.ts";
import { composeFile, composeInterpolate, type ComposeService, composeWith, deployDir, deployText, dockerfile, execForm } from "./deploy-files.ts";
import { spawnSync } from "node:child_process";

const REDIS_DB = "7";

let backend: FakeBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  backend = await startBackend({ kind: "status", status: 200, body: JSON.stringify({ text: "transcribed" }) });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
});
afterAll(async () => {
  await backend?.close();
});

/** What the operator's shell exports before `docker compose up` (compose.yaml's header). */
function operatorShell(): Record<string, string> {
  return { OBJECT_ENCRYPTION_KEY: randomBytes(32).toString("hex"), INFERENCE_URL: backend.url };
}

/** The containers' addresses and MinIO's credentials -> the suite's servers (its Sentinel set and cluster for the variants). */
function hostSubstitutions(): Record<string, string> {
  const redis = new URL(inject("redisUrl"));
  return {
    "redis:6379": `${redis.hostname}:${redis.port}`,
    "http://minio:9000": inject("s3Endpoint"),
    "redis-sentinel-1:26379,redis-sentinel-2:26379,redis-sentinel-3:26379": inject("redisSentinelAddrs").join(","),
    "redis-node-1:6379,redis-node-2:6379,redis-node-3:6379": inject("redisClusterAddrs").join(","),
  };
}

/** The environment compose gives a service's container, with the container addresses substituted. */
function containerEnv(service: ComposeService, shell: Record<string, string>): Record<string, string> {
  const substitutions = hostSubstitutions();
  const env: Record<string, string> = {};
  for (const [name, raw] of Object.entries(service.environment ?? {})) {
    const value = composeInterpolate(String(raw), shell);
    env[name] = substitutions[value] ?? value;
  }
  // s3rver knows one key pair; MinIO takes whatever compose sets as its root user.
  env.S3_ACCESS_KEY = "S3RVER";
  env.S3_SECRET_KEY = "S3RVER";
  // A database of the test's own, except on a cluster (database 0 only).
  if (env.REDIS_CLUSTER_ADDRS === undefined) env.REDIS_DB = REDIS_DB;
  return env;
}

/** The file compose mounts at the container path CONFIG_PATH names (a `./` source is relative to compose.yaml). */
function mountedConfig(service: ComposeService, env: Record<string, string>): string {
  const mount = (service.volumes ?? []).map((v) => v.split(":")).find(([, target]) => target === env.CONFIG_PATH);
  expect(mount, `a volume mounted at CONFIG_PATH ${env.CONFIG_PATH}`).toBeDefined();
  return posix.join(deployDir, mount![0]);
}

/** What a service runs (its `command`, else the image's CMD): the entry script and the role it asks for. */
function entryOf(service: ComposeService): { script: string; role: "gateway" | "relay" } {
  const cmd = service.command ?? execForm(dockerfile().filter((i) => i.keyword === "CMD").at(-1)!.args)!;
  expect(cmd[0]).toBe("node");
  const script = cmd.find((arg) => arg.endsWith(".js")) ?? "";
  const role = cmd[cmd.indexOf("--role") + 1];
  return { script, role: cmd.includes("--role") && role === "relay" ? "relay" : "gateway" };
}

async function startService(name: string, service: ComposeService, shell: Record<string, string>): Promise<GatewayProcess> {
  const env = containerEnv(service, shell);
  const configPath = mountedConfig(service, env);
  const { script, role } = entryOf(service);
  expect(script, `${name} runs the gateway's command line`).toBe("dist/adapters/node/cli.js");
  // Each container listens on its own network; here every process needs a port of its own.
  const relayPort = await freePort();
  const proc = await startGateway(deployText("config.yaml"), {
    role,
    env: { ...env, CONFIG_PATH: configPath, ...(role === "relay" ? { RELAY_METRICS_ADDR: `127.0.0.1:${relayPort}` } : {}) },
  });
  running.push(proc);
  if (role === "relay") {
    proc.url = `http://127.0.0.1:${relayPort}`;
    await waitUntil(
      async () => {
        if (proc.child.exitCode !== null) throw new Error(`${name} exited with ${proc.child.exitCode}:\n${proc.output()}`);
        return (await fetch(`${proc.url}/health?ready=1`).catch(() => undefined))?.status === 200;
      },
      30_000,
      () => `${name} did not become ready:\n${proc.output()}`,
    );
  }
  return proc;
}

describe("deploy/compose.yaml as processes", () => {
  it("runs two gateway replicas and a relay on shared Redis and S3: a job submitted on one replica is read on the other", async () => {
    const compose = composeFile();
    const shell = operatorShell();
    const names = Object.keys(compose.services).filter((n) => compose.services[n].image === "inference-gateway:local");
    expect(names.sort()).toEqual(["gateway-1", "gateway-2", "relay"]);
    const [gw1, gw2, relay] = await Promise.all(names.map((n) => startService(n, compose.services[n], shell)));

    for (const gw of [gw1, gw2]) {
      const ready = await fetch(`${gw.url}/health?ready=1`);
      expect(await ready.json()).toEqual({ status: "ok", checks: { kv: "ok", objects: "ok" } });
    }

    const form = new FormData();
    form.append("file", new Blob(["RIFF....WAVE"], { type: "audio/wav" }), "clip.wav");
    const submitted = await fetch(`${gw1.url}/jobs/transcription`, { method: "POST", body: form });
    const body = (await submitted.json()) as { job_id: string; status: string };
    expect(submitted.status, JSON.stringify(body)).toBe(202);

    // The relay (not a replica: relay.embedded is false) runs it; the other replica reads it.
    let job: { status?: string; result?: unknown } = {};
    await waitUntil(
      async () => {
        job = (await (await fetch(`${gw2.url}/jobs/transcription/${body.job_id}`)).json()) as typeof job;
        return job.status === "completed";
      },
      20_000,
      () => `job not completed on the other replica: ${JSON.stringify(job)}\n${relay.output().slice(-2000)}`,
    );
    expect(job.result).toEqual({ text: "transcribed" });
    expect(backend.requests.map((r) => r.path)).toEqual(["/v1/audio/transcriptions"]);

    const relayMetrics = await (await fetch(`${relay.url}/metrics`)).text();
    expect(relayMetrics).toContain('svc_relay_jobs_total{model="whisper",outcome="completed"} 1');
    expect(metricValue(relayMetrics, "process_resident_memory_bytes", {})).toBeGreaterThan(0);

    // The relay's compose healthcheck, run against the relay (its port substituted).
    const check = compose.services.relay.healthcheck!.test;
    expect(check[0]).toBe("CMD");
    const [bin, ...args] = check.slice(1);
    expect(bin).toBe("node");
    const run = spawnSync("node", args.map((a) => a.replace("127.0.0.1:9464", new URL(relay.url).host)), { cwd: repoRoot, timeout: 10_000 });
    expect(run.status).toBe(0);
  });

  it.each([
    { override: "compose.sentinel.yaml", kv: "sentinel" },
    { override: "compose.cluster.yaml", kv: "cluster" },
  ])("$override: a replica and the relay on the suite's $kv run a job", async ({ override }) => {
    const compose = composeWith(override);
    const shell = operatorShell();
    const [gw, relay] = await Promise.all(["gateway-1", "relay"].map((n) => startService(n, compose.services[n], shell)));
    expect(gw.output()).not.toContain("embedded_kv_store");
    const ready = await fetch(`${gw.url}/health?ready=1`);
    expect(await ready.json()).toEqual({ status: "ok", checks: { kv: "ok", objects: "ok" } });
    const form = new FormData();
    form.append("file", new Blob(["RIFF....WAVE"], { type: "audio/wav" }), "clip.wav");
    const submitted = await fetch(`${gw.url}/jobs/transcription`, { method: "POST", body: form });
    const body = (await submitted.json()) as { job_id: string };
    expect(submitted.status, JSON.stringify(body)).toBe(202);
    let job: { status?: string } = {};
    await waitUntil(
      async () => {
        job = (await (await fetch(`${gw.url}/jobs/transcription/${body.job_id}`)).json()) as typeof job;
        return job.status === "completed";
      },
      20_000,
      () => `job not completed: ${JSON.stringify(job)}\n${relay.output().slice(-2000)}`,
    );
  });

  it("refuses to start without the encryption key and the backend address, as compose.yaml's header says", () => {
    const env = composeFile().services["gateway-1"].environment!;
    expect(() => composeInterpolate(env.OBJECT_ENCRYPTION_KEY, {})).toThrow("OBJECT_ENCRYPTION_KEY: set OBJECT_ENCRYPTION_KEY");
    expect(() => composeInterpolate(env.INFERENCE_URL, {})).toThrow("INFERENCE_URL: set INFERENCE_URL");
  });
});
