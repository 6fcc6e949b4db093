/**
 * `server.workers` as an operator meets it: the real gateway command (Node: node:cluster;
 * Deno: processes sharing the port) with two workers on a redis-server of this file's own,
 * seen from outside as one gateway. A test plugin (fixtures/plugins/worker-pid.ts) marks
 * every answer with the pid of the worker that gave it. Each request goes on a connection of
 * its own (`connection: close`), as connections, not requests, are spread over the workers.
 * No sleeps: every wait polls with a deadline.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type HeldBackend, startHeldBackend } from "../fixtures/held-backend.ts";
import { type InferenceBackend, startInferenceBackend } from "../fixtures/inference-backend.ts";
import { exitCode, type GatewayProcess, onDeno, repoRoot, startGateway, waitUntil } from "../support/gateway-process.ts";
import { metricValue } from "../support/prometheus.ts";
import { type RunningServer, startRedis } from "../support/servers.ts";

const PID_PLUGIN = new URL("../fixtures/plugins/worker-pid.ts", import.meta.url).pathname;
const EXIT_PLUGIN = new URL("../fixtures/plugins/exit-in-worker.ts", import.meta.url).pathname;
const SPREAD = { connection: "close" };

let redis: RunningServer;
let held: HeldBackend;
let inference: InferenceBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  [redis, held, inference] = await Promise.all([startRedis(), startHeldBackend(), startInferenceBackend()]);
});
afterEach(async () => {
  held.release();
  inference.release();
  await Promise.all(running.splice(0).map((gw) => gw.kill()));
});
afterAll(async () => {
  await Promise.all([redis.stop(), held.close(), inference.close()]);
});

function config({ workers = 2, store = "redis", extra = "" }: { workers?: number; store?: "redis" | "memory"; extra?: string } = {}): string {
  return `
server:
  workers: ${workers}
  consumer_header: X-Consumer
plugins:
  load: [${JSON.stringify(PID_PLUGIN)}]
${store === "redis" ? `redis:\n  addr: ${JSON.stringify(redis.url)}` : ""}
object_store:
  dir: ${JSON.stringify(mkdtempSync(join(tmpdir(), "gw-workers-objects-")))}
${extra}
services:
  - type: echo
    model: echo
    inference_url: ${held.url}
    operations: { run: [/v1/echo] }
  - type: transcription
    model: whisper
    inference_url: ${inference.url}
    operations: { transcribe: [/transcribe] }
`;
}

/** Starts the gateway and waits until both workers serve (`svc_workers 2`). */
async function start(yaml: string): Promise<GatewayProcess> {
  const gw = await startGateway(yaml);
  running.push(gw);
  await waitUntil(async () => metricValue(await metricsOf(gw), "svc_workers", {}) === 2, 30_000, () => `the workers did not all start:\n${gw.output()}`);
  return gw;
}

async function metricsOf(gw: GatewayProcess): Promise<string> {
  return await (await fetch(`${gw.url}/metrics`, { headers: SPREAD })).text();
}

async function echo(gw: GatewayProcess, consumer: string): Promise<{ status: number; pid: string }> {
  const response = await fetch(`${gw.url}/v1/echo`, {
    method: "POST",
    headers: { ...SPREAD, "content-type": "application/json", "x-consumer": consumer },
    body: "{}",
  });
  await response.arrayBuffer();
  return { status: response.status, pid: response.headers.get("x-test-pid") ?? "" };
}

/** Asks until every one of the `count` workers answered; each worker's answer by pid. */
async function eachWorker<T>(gw: GatewayProcess, path: string, count = 2, accept: (body: T) => boolean = () => true): Promise<Map<string, T>> {
  const seen = new Map<string, T>();
  await waitUntil(
    async () => {
      const response = await fetch(`${gw.url}${path}`, { headers: SPREAD });
      const body = (await response.json()) as T;
      if (response.ok && accept(body)) seen.set(response.headers.get("x-test-pid") ?? "", body);
      return seen.size === count;
    },
    20_000,
    () => `answers of ${count} workers to ${path} expected, got ${seen.size}:\n${gw.output().slice(-3000)}`,
  );
  return seen;
}

const lines = (gw: GatewayProcess, event: string) => gw.output().split("\n").filter((line) => line.includes(`"event":"${event}"`));

// Each case starts a primary and two workers: under a loaded run a start alone took over 20 s,
// so the cases get a bound of their own (a bound on waiting, not a timing).
describe("server.workers: 2 on Redis", { timeout: 90_000 }, () => {
  it("serves from both workers, with limits counted once across them and /metrics summing both", async () => {
    const gw = await start(config({ extra: `rate_limits:\n  echo:\n    "*": { rate: 3, period: 1m }` }));
    const pids = await eachWorker<{ pid: number }>(gw, "/test/pid");
    expect(new Set([...pids.values()].map((body) => String(body.pid)))).toEqual(new Set(pids.keys()));

    // At least 8 requests, and until both workers have answered some (the kernel picks the
    // worker of a connection on Deno; Node's primary takes turns).
    const answers: Array<{ status: number; pid: string }> = [];
    while (answers.length < 8 || (new Set(answers.map((a) => a.pid)).size < 2 && answers.length < 40)) answers.push(await echo(gw, "shared"));
    // The window is one: 3 served, the rest refused, whichever worker took them.
    expect(new Set(answers.map((a) => a.pid))).toEqual(new Set(pids.keys()));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, ...answers.slice(3).map(() => 429)]);

    const metrics = await metricsOf(gw);
    expect(metricValue(metrics, "svc_gateway_requests_total", { status: "200", mode: "sync", service_type: "echo" })).toBe(3);
    expect(metricValue(metrics, "svc_gateway_requests_total", { status: "429", mode: "sync", service_type: "echo" })).toBe(answers.length - 3);
    expect(metricValue(metrics, "svc_workers", {})).toBe(2);
    expect(metricValue(metrics, "svc_worker_restarts_total", {})).toBe(0);
    // One series each, not one per worker.
    expect(metrics.match(/^svc_workers /gm)).toHaveLength(1);
  });

  it("reloads both workers from a POST /-/reload to either, or neither when the file is refused", async () => {
    const gw = await start(config());
    const before = await eachWorker<{ server: { priority_header: string } }>(gw, "/-/config");
    for (const body of before.values()) expect(body.server.priority_header).toBe("");

    gw.writeConfig(
      config({ extra: "relay:\n  concurrency: 3" }).replace("consumer_header: X-Consumer", "consumer_header: X-Consumer\n  priority_header: X-Urgent"),
    );
    const reload = await fetch(`${gw.url}/-/reload`, { method: "POST", headers: SPREAD });
    expect(reload.status).toBe(200);
    expect(await reload.json()).toEqual({ status: "reloaded", services: 2 });
    // Answered once every worker runs the new file: the first answer of each already has it.
    const after = await eachWorker<{ server: { priority_header: string } }>(gw, "/-/config");
    for (const body of after.values()) expect(body.server.priority_header).toBe("X-Urgent");

    gw.writeConfig(config().replace("  - type: echo\n", "  - type: echo\n    backends: [{ url: not-a-url }]\n"));
    const refused = await fetch(`${gw.url}/-/reload`, { method: "POST", headers: SPREAD });
    expect(refused.status).toBe(500);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
      "services[0].backends[0].url: must start with http:// or https://",
    );
    const kept = await eachWorker<{ server: { priority_header: string } }>(gw, "/-/config");
    for (const body of kept.values()) expect(body.server.priority_header).toBe("X-Urgent");
    expect(lines(gw, "reloaded")).toHaveLength(2);
    expect(lines(gw, "reload_refused")).toHaveLength(2);
  });

  it("runs the embedded relay in one worker, with its configured concurrency", async () => {
    const gw = await start(config({ extra: "relay:\n  embedded: true\n  concurrency: 1" }));
    expect(lines(gw, "relay_started")).toHaveLength(1);
    expect(lines(gw, "relay_started")[0]).toContain('"worker":1');
    inference.hold();
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const form = new FormData();
      form.append("file", new Blob([`job-${n}`]), `${n}.wav`);
      const response = await fetch(`${gw.url}/jobs/transcription`, { method: "POST", body: form, headers: SPREAD });
      expect(response.status).toBe(202);
      ids.push(((await response.json()) as { job_id: string }).job_id);
    }
    await waitUntil(() => inference.held === 1);
    expect(metricValue(await metricsOf(gw), "svc_relay_queue_depth", {})).toBe(2);
    inference.release();
    for (const id of ids) {
      await waitUntil(async () =>
        ((await (await fetch(`${gw.url}/jobs/transcription/${id}`, { headers: SPREAD })).json()) as { status: string }).status === "completed"
      );
    }
    expect(inference.received.map((job) => job.content)).toEqual(["job-1", "job-2", "job-3"]);
  });

  it("drains both workers on SIGTERM: requests in flight on each finish, then every process exits 0", async () => {
    const gw = await start(config());
    held.hold();
    // Requests waiting on the backend until every worker has some. A round is one request that
    // waits (it has reached the backend before the round goes on) and two questions: three
    // connections, so where Node's primary hands connections to the workers in turn, the next
    // round's request goes to the other worker (with one question a round, every request went
    // to the same worker and every question to the idle one, until the deadline). A request
    // that fails is an answer the assertions below show, not an unhandled rejection.
    const answers: Array<Promise<{ status: number; pid: string }>> = [];
    const busy = new Set<string>();
    await waitUntil(
      async () => {
        answers.push(echo(gw, "draining").catch((error: unknown) => ({ status: 0, pid: String(error) })));
        await waitUntil(() => held.waiting === answers.length, 20_000, () => `${held.waiting} of ${answers.length} requests at the backend`);
        for (const _question of [1, 2]) {
          const response = await fetch(`${gw.url}/test/pid`, { headers: SPREAD });
          const body = (await response.json()) as { in_flight: number };
          if (body.in_flight > 0) busy.add(response.headers.get("x-test-pid") ?? "");
        }
        return busy.size === 2;
      },
      40_000,
      () => `both workers busy expected, ${busy.size} after ${answers.length} requests:\n${gw.output().slice(-3000)}`,
    );
    const stopped = gw.stop();
    await waitUntil(
      () => lines(gw, "shutdown").filter((line) => line.includes('"reason":"primary_stop"')).length === 2,
      30_000,
      () => gw.output(),
    );
    held.release();
    const done = await Promise.all(answers);
    expect(done.map((a) => a.status)).toEqual(done.map(() => 200));
    expect(new Set(done.map((a) => a.pid)).size).toBe(2);
    const code = await stopped;
    // Deno's node:child_process reports the signal it sent instead of the exit code.
    if (!onDeno) expect(code).toBe(0);
    expect(lines(gw, "stopped")).toHaveLength(3);
    expect(lines(gw, "stopped").find((line) => line.includes('"process":"primary"'))).toContain('"code":0');
  });

  // A start of the cluster and a worker's restart: 20 s under the full suite's load, more on a busier machine.
  it("starts a worker again when one dies, and counts the restart", { timeout: 60_000 }, async () => {
    const gw = await start(config());
    const pids = [...(await eachWorker<{ pid: number }>(gw, "/test/pid")).values()].map((body) => body.pid);
    process.kill(pids[1], "SIGKILL");
    await waitUntil(
      async () => {
        // A connection the kernel handed to the killed worker's socket fails: not yet, poll again.
        const metrics = await metricsOf(gw).catch(() => "");
        return metricValue(metrics, "svc_worker_restarts_total", {}) === 1 && metricValue(metrics, "svc_workers", {}) === 2;
      },
      40_000,
      () => gw.output().slice(-3000),
    );
    const now = [...(await eachWorker<{ pid: number }>(gw, "/test/pid")).values()].map((body) => body.pid);
    expect(now).toContain(pids[0]);
    expect(now).not.toContain(pids[1]);
    expect(lines(gw, "worker_exited")[0]).toContain('"signal":"SIGKILL"');
    expect(lines(gw, "worker_restarted")).toHaveLength(1);
  });
});

describe("server.workers: workers that cannot start or stay up", () => {
  it("fails once, with the first worker's reason, when the port is taken", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      const gw = await startGateway(config(), { noWait: true, env: { GATEWAY_ADDR: `127.0.0.1:${port}` } });
      running.push(gw);
      expect(await exitCode(gw)).toBe(1);
      expect(gw.output().match(/\[GW_LISTEN_FAILED\]/g)).toHaveLength(1);
      expect(lines(gw, "workers_not_started")).toHaveLength(1);
      expect(lines(gw, "config_source").filter((line) => line.includes('"worker":2'))).toEqual([]);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  // Five starts of a worker plus 7.5 s of backoff: about 15 s on a quiet machine, 45 s once on
  // the CI machine under the whole suite's load (a worker took 6 s to start), hence the bounds.
  it("stops every worker and exits 1 when one keeps dying soon after its start", { timeout: 120_000 }, async () => {
    const yaml = config().replace(JSON.stringify(PID_PLUGIN), `${JSON.stringify(PID_PLUGIN)}, ${JSON.stringify(EXIT_PLUGIN)}`);
    const gw = await startGateway(yaml, { env: { EXIT_IN_WORKER: "2" } });
    running.push(gw);
    expect(await exitCode(gw, 100_000)).toBe(1);
    const loop = lines(gw, "workers_crash_loop");
    expect(loop).toHaveLength(1);
    expect(loop[0]).toContain('"worker":2');
    expect(loop[0]).toContain("exited 5 times in a row");
    expect(lines(gw, "worker_exited").map((line) => JSON.parse(line).restart_in_ms)).toEqual([500, 1000, 2000, 4000]);
    // Worker 1 was stopped as on SIGTERM.
    expect(lines(gw, "stopped").filter((line) => line.includes('"worker":1'))).toHaveLength(1);
  });

  it("leaves no worker running when the primary is killed", async () => {
    const gw = await start(config());
    const pids = [...(await eachWorker<{ pid: number }>(gw, "/test/pid")).values()].map((body) => body.pid);
    await gw.kill();
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitUntil(() => !pids.some(alive), 15_000, () => `workers still running: ${pids.filter(alive).join(", ")}`);
  });

  it.runIf(onDeno)("refuses on Deno without the permission to start the workers", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gw-workers-"));
    writeFileSync(join(dir, "config.yaml"), config());
    // Every permission the gateway uses but --allow-run.
    const permissions = ["--allow-read", "--allow-write", "--allow-env", "--allow-net", "--allow-sys", "--allow-ffi"];
    const child = spawn(process.execPath, [
      "run",
      "--unstable-no-legacy-abort",
      ...permissions,
      join(repoRoot, "adapters/deno/cli.ts"),
      "--config",
      join(dir, "config.yaml"),
    ], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(output).toContain("[GW_WORKERS_UNSUPPORTED]");
    expect(output).toContain("--allow-run");
  });
});

describe("server.workers on the embedded stores", () => {
  it("refuses to start, saying to use Redis", async () => {
    const gw = await startGateway(config({ store: "memory" }), { noWait: true });
    running.push(gw);
    expect(await exitCode(gw)).toBe(1);
    expect(gw.output()).toContain("[GW_WORKERS_NEED_REDIS]");
    expect(gw.output()).toContain("Set redis.addr (or redis.sentinel / redis.cluster) so the workers share them");
    expect(lines(gw, "listening")).toEqual([]);
  });
});
