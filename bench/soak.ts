/**
 * `npm run soak -- [--duration S] [--rate N] [--runtime node|deno] [--store redis|embedded]`:
 * the mock backend, a private redis-server (the embedded store when there is none) and the
 * gateway with a production-like config (consumer header, never-triggering rate limits,
 * usage, metrics, response cache, async jobs with the embedded relay) as real processes,
 * then a fixed-rate mix of every kind of traffic for the duration, every answer checked,
 * while the gateway's RSS, open descriptors and CPU are sampled. Exits 1 on any wrong
 * answer, any lost job, an RSS trend after the warm-up of 1 MB/min or more, or open
 * descriptors growing (see soak-report.ts for the rules).
 *
 * The rate is fixed and moderate on purpose (200 req/s by default: about 15% of what the
 * gateway serves at 32 connections, ~40% of its core since a request costs more CPU at a
 * low rate): nothing queues, so memory follows what the gateway keeps rather than a
 * backlog, every error is the gateway's rather than an overloaded generator's, and 5
 * minutes still make 60,000 requests, so a leak of ~100 bytes per request shows as more
 * than 1 MB/min.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../test/support/servers.ts";
import { ArgvReader } from "./args.ts";
import { gatewayConfig } from "./config.ts";
import { machine, redisInstalled, repoRoot, resultsDir, startGateway, startRedis } from "./gateway.ts";
import { runOpenLoop } from "./load/open-loop.ts";
import { type OpenLoopResult, percentile, type RequestSpec } from "./load/spec.ts";
import { specFor } from "./matrix.ts";
import { listeningPort, OTHER_CORE, pinProcess, type Service, spawnService } from "./procs.ts";
import { SCENARIOS } from "./scenarios.ts";
import { runJobs } from "./soak-jobs.ts";
import { type KindFigures, MIN_JUDGED_SECONDS, printSoak, type SoakResults, verdict } from "./soak-report.ts";
import { InspectorSession } from "./soak-inspector.ts";
import { type ProcessSample, ProcessWatcher, slope } from "./soak-sampler.ts";

const log = (line: string) => process.stderr.write(`${line}\n`);

const USAGE = `npm run soak -- [options]
  --duration S            seconds of load (default 300)
  --rate N                total requests/s of the mix, job polls not counted (default 200)
  --runtime node|deno     the gateway's runtime (default node)
  --store redis|embedded  default: redis when redis-server is installed
  --warmup S              seconds left out of the RSS trend (default 60; a third of shorter runs)
  --sample-every S        seconds between samples of the gateway process (default 10)
  --no-gc                 sample RSS as it is instead of right after a full GC (through --inspect)`;

interface SoakArgs {
  duration: number;
  rate: number;
  runtime: "node" | "deno";
  store?: "redis" | "embedded";
  warmup?: number;
  sampleEvery: number;
  gc: boolean;
}

function parseSoakArgs(argv: readonly string[]): SoakArgs {
  const args: SoakArgs = { duration: 300, rate: 200, runtime: "node", sampleEvery: 10, gc: true };
  const reader = new ArgvReader(argv, USAGE);
  for (let arg = reader.next(); arg !== undefined; arg = reader.next()) {
    if (arg === "--duration") args.duration = reader.positive(arg);
    else if (arg === "--rate") args.rate = reader.positive(arg);
    else if (arg === "--warmup") args.warmup = Number(reader.value(arg));
    else if (arg === "--sample-every") args.sampleEvery = reader.positive(arg);
    else if (arg === "--no-gc") args.gc = false;
    else if (arg === "--runtime") args.runtime = reader.choice(arg, ["node", "deno"] as const);
    else if (arg === "--store") args.store = reader.choice(arg, ["redis", "embedded"] as const);
    else throw reader.unknown(arg);
  }
  return args;
}

/** Share of the total rate per kind; job submissions add their polls (every 50 ms until done) on top. */
const MIX = { "sync-json": 0.25, "llm-miss": 0.2, "llm-hit": 0.25, stream: 0.15, jobs: 0.05, usage: 0.05, "usage-report": 0.025, metrics: 0.025 } as const;
const CONSUMERS = 50;

/** The admin and per-consumer reads: GETs whose answers must carry what a dashboard reads. */
function readSpecs(base: string): Record<"usage" | "usage-report" | "metrics", RequestSpec> {
  const today = new Date().toISOString().slice(0, 10);
  const get = (path: string, contains: string, consumers?: number): RequestSpec => ({
    url: base + path,
    method: "GET",
    headers: {},
    body: Buffer.alloc(0),
    consumers,
    expect: { status: 200, contains },
  });
  return {
    usage: get("/usage", '"consumer":"consumer-', CONSUMERS),
    "usage-report": get(`/-/usage/report?type=llm&period=daily&from=${today}&to=${today}&total=true`, '"total":{"requests":'),
    metrics: get("/metrics", "svc_gateway_requests_total{"),
  };
}

function kindFigures(kind: string, rate: number, result: OpenLoopResult): KindFigures {
  return { kind, rate, requests: result.requests, errors: result.errors, invalid: result.invalid, p50Ms: result.p50Ms, p99Ms: result.p99Ms, late: result.late };
}

/**
 * The gateway once the soak's clients closed their connections: polled (up to 10 s) until it
 * has closed its side of them, leaving the health check's idle one from before the load.
 */
async function idleAfterLoad(watcher: ProcessWatcher, before: ProcessSample): Promise<ProcessSample> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const sample = await watcher.snapshot();
    if (!sample) throw new Error("the gateway exited after the load");
    if (sample.fds.clients <= before.fds.clients || Date.now() > deadline) return sample;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const sampleAt = (samples: ProcessSample[], t: number) => (samples.find((s) => s.t >= t) ?? samples[samples.length - 1]);

async function main(): Promise<number> {
  const args = parseSoakArgs(process.argv.slice(2));
  const warmup = args.warmup ?? (args.duration >= MIN_JUDGED_SECONDS ? 60 : Math.round(args.duration / 3));
  if (!pinProcess(process.pid, OTHER_CORE)) log("taskset not found: processes are not pinned to cores");
  const hasRedis = redisInstalled();
  if (args.store === "redis" && !hasRedis) throw new Error("--store redis: redis-server is not installed (apt-get install redis-server)");
  const store = args.store ?? (hasRedis ? "redis" : "embedded");
  if (store === "embedded" && args.store === undefined) log("redis-server is not installed: the soak runs on the embedded store");

  const workDir = mkdtempSync(join(tmpdir(), "gateway-soak-"));
  const services: Service[] = [];
  try {
    const mock = spawnService("mock backend", [process.execPath, join(repoRoot, "dist/bench/mock-backend.js"), "0"], { core: OTHER_CORE });
    services.push(mock);
    const mockUrl = `http://127.0.0.1:${await listeningPort(mock)}`;
    let redis: Awaited<ReturnType<typeof startRedis>> | undefined;
    if (store === "redis") {
      redis = await startRedis(workDir);
      services.push(redis.service);
    }
    const redisAddr = redis?.addr ?? "";
    const configPath = join(workDir, "gateway.yaml");
    writeFileSync(configPath, gatewayConfig({ production: true, relay: true, mockUrl, objectDir: mkdtempSync(join(workDir, "objects-")), redisAddr }));
    const inspectPort = args.gc ? await freePort() : undefined;
    const gateway = await startGateway({
      runtime: args.runtime,
      name: "gateway",
      configPath,
      runtimeFlags: inspectPort ? [`--inspect=127.0.0.1:${inspectPort}`] : [],
    });
    services.push(gateway.service);
    const inspector = inspectPort ? await InspectorSession.connect(inspectPort) : undefined;
    log(
      `soak: ${args.duration} s at ${args.rate} req/s, gateway pid ${gateway.service.pid} on ${args.runtime}, ${store} store, warm-up ${warmup} s, plugins: ${
        gateway.plugins.join(", ")
      }`,
    );

    const ports = { gateway: gateway.port, backend: Number(new URL(mockUrl).port), redis: redis?.port };
    const watcher = new ProcessWatcher(gateway.service.pid, ports, inspector, (s) =>
      log(
        `  t=${s.t.toFixed(0)}s rss=${s.rssMb.toFixed(1)}MB${s.heapMb !== undefined ? ` heap=${s.heapMb.toFixed(1)}MB` : ""} ` +
          `fds=${s.fds.total} (clients ${s.fds.clients}, backend ${s.fds.upstream}, redis ${s.fds.redis}, other ${s.fds.other}) cpu=${
            (s.cpu * 100).toFixed(0)
          }%`,
      ));
    // Only its RSS is read: the store's own growth, told apart from the gateway's.
    const redisWatcher = redis ? new ProcessWatcher(redis.service.pid, ports) : undefined;
    await watcher.start(args.sampleEvery);
    await redisWatcher?.start(args.sampleEvery);

    const rateOf = (kind: keyof typeof MIX) => args.rate * MIX[kind];
    const reads = readSpecs(gateway.target.base);
    const loops: Array<[keyof typeof MIX, RequestSpec]> = [
      ...(["sync-json", "llm-miss", "llm-hit", "stream"] as const).map((
        id,
      ): [keyof typeof MIX, RequestSpec] => [id, specFor(SCENARIOS[id], gateway.target, { consumers: CONSUMERS })]),
      ...(["usage", "usage-report", "metrics"] as const).map((id): [keyof typeof MIX, RequestSpec] => [id, reads[id]]),
    ];
    const jobs = runJobs(gateway.target.base, rateOf("jobs"), args.duration, CONSUMERS);
    let kinds: KindFigures[];
    try {
      kinds = await Promise.all(loops.map(async ([kind, spec]) => kindFigures(kind, rateOf(kind), await runOpenLoop(spec, rateOf(kind), args.duration))));
    } finally {
      watcher.stop();
      redisWatcher?.stop();
    }
    const jobFigures = await jobs;
    if (gateway.service.child.exitCode !== null || gateway.service.child.signalCode !== null) {
      throw new Error(`the gateway exited during the soak:\n${gateway.service.output().slice(-4000)}`);
    }

    const samples = watcher.samples;
    const idle = await idleAfterLoad(watcher, samples[0]);
    inspector?.close();
    const settled = samples.filter((s) => s.t >= warmup);
    const [first, last] = [samples[0], samples[samples.length - 1]];
    const afterWarmup = sampleAt(samples, warmup);
    const completion = [...jobFigures.completionMs].sort((a, b) => a - b);
    const { completionMs: _completionMs, ...jobCounts } = jobFigures;
    const partial: Omit<SoakResults, "checks" | "pass"> = {
      date: new Date().toISOString(),
      runtime: args.runtime,
      machine: machine(),
      store,
      plugins: gateway.plugins,
      durationSeconds: args.duration,
      totalRate: args.rate,
      warmupSeconds: warmup,
      sampleEverySeconds: args.sampleEvery,
      kinds,
      jobs: { ...jobCounts, completionP50Ms: percentile(completion, 50), completionP99Ms: percentile(completion, 99) },
      gateway: {
        samples,
        gcBeforeSample: inspector !== undefined,
        rssSlopeMbPerMin: slope(settled.map((s) => ({ x: s.t / 60, y: s.rssMb }))),
        heapSlopeMbPerMin: inspector ? slope(settled.map((s) => ({ x: s.t / 60, y: s.heapMb ?? Number.NaN }))) : undefined,
        rssMb: { first: first.rssMb, afterWarmup: afterWarmup.rssMb, last: last.rssMb, max: Math.max(...samples.map((s) => s.rssMb)) },
        heapMb: inspector ? { first: first.heapMb ?? Number.NaN, afterWarmup: afterWarmup.heapMb ?? Number.NaN, last: last.heapMb ?? Number.NaN } : undefined,
        idleAfter: { rssMb: idle.rssMb, heapMb: idle.heapMb },
        fds: { first: first.fds, afterWarmup: afterWarmup.fds, last: last.fds, idleAfter: idle.fds, maxTotal: Math.max(...samples.map((s) => s.fds.total)) },
        cpuMean: settled.reduce((sum, s, _, all) => sum + s.cpu / all.length, 0),
      },
      redisRssMb: redisWatcher?.samples.length
        ? { first: redisWatcher.samples[0].rssMb, last: redisWatcher.samples[redisWatcher.samples.length - 1].rssMb }
        : undefined,
    };
    const results: SoakResults = { ...partial, ...verdict(partial) };
    process.stdout.write(`\n${printSoak(results)}\n`);
    mkdirSync(resultsDir, { recursive: true });
    const json = `${JSON.stringify(results, null, 2)}\n`;
    writeFileSync(join(resultsDir, "soak-latest.json"), json);
    writeFileSync(join(resultsDir, `soak-latest-${args.runtime}.json`), json);
    return results.pass ? 0 : 1;
  } finally {
    for (const service of services.reverse()) await service.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(2);
  },
);
