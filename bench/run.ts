/**
 * `npm run bench`: starts the mock backend, the two floors (the bare node:http proxy and the
 * framework floor) and the gateway (one process per config variant) as real processes, pins
 * the gateway and the floors to core 0 and everything else (mock, load generators, Redis, this
 * runner) to core 1, runs every scenario against the backend directly, through the gateway and
 * through the floors in interleaved rounds, prints the tables and writes bench/results/. Exits 1
 * when any answer was wrong (status or body) anywhere.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { type BenchArgs, parseArgs, selected, timingFor } from "./args.ts";
import { type ConfigOptions, gatewayConfig, MODELS, PATHS } from "./config.ts";
import { type Gateway, machine, redisInstalled, repoRoot, resultsDir, startFlags, startGateway, startRedis } from "./gateway.ts";
import { runBatchEndToEnd } from "./batches.ts";
import { GROWTH, growthId } from "./growth.ts";
import { checkGuards, readGuards, setGuards } from "./guards.ts";
import { runJobsEndToEnd } from "./jobs.ts";
import { wrkInstalled } from "./load/wrk.ts";
import { type LoadId, type Population, type RowContext, runScenario } from "./matrix.ts";
import type { LoadGenerator, Target } from "./measure.ts";
import { BOTH_CORES, listeningPort, OTHER_CORE, pinProcess, SERVER_CORE, type Service, spawnService } from "./procs.ts";
import { checkTargets, printAll, type Results } from "./report.ts";
import { type ScenarioId, SCENARIOS } from "./scenarios.ts";
import { jobAccepted, mockAnswered, uploadOnce } from "./upload.ts";

const log = (line: string) => process.stderr.write(`${line}\n`);
const GUARDS_PATH = join(repoRoot, "bench/guards.json");

interface Variant {
  id: string;
  config: Omit<ConfigOptions, "mockUrl" | "objectDir" | "redisAddr"> & { redis: boolean };
  /**
   * Scenarios with the loads to run and whether the bare proxy and the framework floor run
   * alongside (at every load: the floor's p99, first event and CPU are what the performance targets
   * (docs/design.md#performance-targets) are judged against; configs without it borrow the basic
   * config's, see bench/report.ts).
   */
  scenarios: Array<{ id: ScenarioId; loads: LoadId[]; bare: boolean; floor?: boolean; direct?: boolean }>;
  population?: Population;
  /** `server.workers`: the gateway may use both cores and is charged with its workers' CPU (bench/README.md). */
  workers?: number;
}

const BOTH: LoadId[] = ["c32", "r100"];
const VARIANTS: Variant[] = [
  {
    id: "basic",
    config: { production: false, redis: false, relay: false },
    scenarios: [
      ...(["sync-json", "llm-miss", "llm-hit", "stream"] as const).map((id) => ({ id, loads: BOTH, bare: true, floor: true })),
      // Guardrails' cost: against the same requests to a gateway of this config without its guardrails, in the same rounds.
      ...(["guard-input-2k", "guard-input-2k-typical", "guard-stream-out"] as const).map((id) => ({ id, loads: BOTH, bare: false })),
    ],
  },
  ...(["prod-memory", "prod-redis"] as const).map((id) => ({
    id,
    config: { production: true, redis: id === "prod-redis", relay: false },
    population: { consumers: 50 },
    scenarios: [
      { id: "llm-miss" as const, loads: BOTH, bare: true, floor: true },
      { id: "llm-hit" as const, loads: BOTH, bare: false },
      { id: "stream" as const, loads: BOTH, bare: false },
    ],
  })),
  // usage.write: after_answer, against prod-redis's rows of the same run (docs/usage.md#when-usage-is-visible).
  {
    id: "prod-redis-after-answer",
    config: { production: true, redis: true, relay: false, usageWrite: "after_answer" },
    population: { consumers: 50 },
    scenarios: [
      { id: "llm-miss", loads: BOTH, bare: false },
      { id: "stream", loads: BOTH, bare: false },
    ],
  },
  ...GROWTH.map((g, index): Variant => ({
    id: growthId(g),
    config: { production: true, redis: false, relay: false, models: g.models },
    population: { consumers: g.consumers, random: true, models: g.models },
    // The framework floor once, with the first: the growth rows are judged against it and against the first row.
    scenarios: [{ id: "growth", loads: ["c32"], bare: false, floor: index === 0, direct: false }],
  })),
  // server.workers 1 and 2 on Redis (the embedded store refuses workers); the floor with the first.
  ...[1, 2].map((workers): Variant => ({
    id: `workers-${workers}`,
    config: { production: true, redis: true, relay: false, workers },
    population: { consumers: 50 },
    workers,
    scenarios: [{ id: "llm-miss", loads: ["c32"], bare: false, floor: workers === 1 }],
  })),
  {
    id: "async",
    config: { production: false, redis: false, relay: false },
    scenarios: [
      { id: "upload-100k", loads: ["c32"], bare: true },
      { id: "submit-100k", loads: ["c32"], bare: true },
    ],
  },
];

/** Starts the gateway of one config variant; `--cpu-prof` profiles it (Node only). */
async function startVariant(args: BenchArgs, variant: string, config: string, workDir: string, core?: string): Promise<Gateway> {
  const configPath = join(workDir, `gateway-${variant}.yaml`);
  writeFileSync(configPath, config);
  const profiles = join(resultsDir, "profiles");
  if (args.cpuProf) mkdirSync(profiles, { recursive: true });
  const profile = args.cpuProf && args.runtime === "node" ? ["--cpu-prof", `--cpu-prof-dir=${profiles}`, `--cpu-prof-name=gateway-${variant}.cpuprofile`] : [];
  return await startGateway({
    runtime: args.runtime,
    name: `gateway (${variant})`,
    configPath,
    runtimeFlags: profile,
    env: args.logLevel ? { LOG_LEVEL: args.logLevel } : {},
    core,
  });
}

/** A failure during a run names the gateway's own last words when it was the gateway that died. */
function crashed(service: Service, error: unknown): unknown {
  if (service.child.exitCode === null && service.child.signalCode === null) return error;
  return new Error(`${service.name} exited (${service.child.exitCode ?? service.child.signalCode}) during the run:\n${service.output().slice(-4000)}`);
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args.report) {
    // Judged anew: a saved file's own `targets` are those of the code that wrote it.
    const saved = JSON.parse(readFileSync(args.report, "utf8")) as Results;
    const other = args.compare ? (JSON.parse(readFileSync(args.compare, "utf8")) as Results) : undefined;
    if (args.setGuards) {
      const count = setGuards(saved, readGuards(GUARDS_PATH), basename(args.report), GUARDS_PATH);
      log(`${count} guards of ${saved.runtime} set from ${args.report} in ${GUARDS_PATH}`);
    }
    process.stdout.write(`${printAll({ ...saved, targets: checkTargets(saved, other), guards: checkGuards(saved, readGuards(GUARDS_PATH)) })}\n`);
    return 0;
  }
  const timing = timingFor(args.quick);
  if (!pinProcess(process.pid, OTHER_CORE)) log("taskset not found: processes are not pinned to cores (figures are noisier)");
  let generator: LoadGenerator = args.loadgen ?? "wrk";
  if (generator === "wrk" && !wrkInstalled()) {
    log("wrk is not installed, falling back to autocannon (several times wrk's CPU per request on the load core).");
    log("For the figures bench/README.md shows, install wrk: sudo apt-get install wrk (Debian/Ubuntu) or brew install wrk (macOS).");
    generator = "autocannon";
  }
  const info = machine();
  log(`bench: ${args.quick ? "quick" : "full"} run, gateway on ${args.runtime}, ${generator}, ${info.nproc} cores (${info.cpu}), pinned: ${info.pinned}`);

  const workDir = mkdtempSync(join(tmpdir(), "gateway-bench-"));
  const services: Service[] = [];
  const results: Results = {
    date: new Date().toISOString(),
    mode: args.quick ? "quick" : "full",
    runtime: args.runtime,
    loadGenerator: generator === "wrk" ? "wrk 4.1 (1 thread, Lua body checks)" : "autocannon 8",
    machine: info,
    rows: [],
    uploads: [],
    plugins: {},
    targets: [],
    wrong: 0,
  };
  try {
    const mock = spawnService("mock backend", [process.execPath, join(repoRoot, "dist/bench/mock-backend.js"), "0"], { core: OTHER_CORE });
    services.push(mock);
    const mockUrl = `http://127.0.0.1:${await listeningPort(mock)}`;
    const bare = spawnService("bare proxy", [process.execPath, join(repoRoot, "dist/bench/bare-proxy.js"), "0", mockUrl], { core: SERVER_CORE });
    services.push(bare);
    const floor = spawnService("framework floor", [process.execPath, ...startFlags("node"), join(repoRoot, "dist/bench/framework-floor.js"), "0", mockUrl], {
      core: SERVER_CORE,
    });
    services.push(floor);
    const direct: Target = { name: "direct", base: mockUrl, pid: mock.pid };
    const bareTarget: Target = { name: "bare", base: `http://127.0.0.1:${await listeningPort(bare)}`, pid: bare.pid };
    const floorTarget: Target = { name: "floor", base: `http://127.0.0.1:${await listeningPort(floor)}`, pid: floor.pid };

    let redisAddr = "";
    const wantRedis = VARIANTS.some((v) => v.config.redis && v.scenarios.some((s) => selected(args, v.id, s.id)));
    if (wantRedis) {
      if (!redisInstalled()) {
        log("redis-server is not installed: the prod-redis variant is skipped (apt-get install redis-server)");
      } else {
        const redis = await startRedis(workDir);
        services.push(redis.service);
        redisAddr = redis.addr;
      }
    }

    for (const variant of VARIANTS) {
      const scenarios = variant.scenarios.filter((s) => selected(args, variant.id, s.id));
      const uploads = variant.id === "async" && selected(args, "async", "upload");
      if (scenarios.length === 0 && !uploads) continue;
      if (variant.config.redis && redisAddr === "") continue;
      const objectDir = mkdtempSync(join(workDir, "objects-"));
      const configOf = (guardrails: boolean) =>
        gatewayConfig({ ...variant.config, mockUrl, objectDir, redisAddr: variant.config.redis ? redisAddr : "", guardrails });
      const gateway = await startVariant(args, variant.id, configOf(true), workDir, variant.workers ? BOTH_CORES : undefined);
      // The guardrail scenarios' baseline: a gateway of the same config without its guardrails, started with the first of them.
      let unguarded: Gateway | undefined;
      const gatewayTarget: Target = variant.workers ? { ...gateway.target, tree: true } : gateway.target;
      results.plugins[variant.id] = gateway.plugins;
      log(`${variant.id}: gateway pid ${gateway.service.pid}, plugins: ${gateway.plugins.join(", ")}`);
      const context: RowContext = { variant: variant.id, timing, generator, repoRoot, population: variant.population, log };
      try {
        for (const scenario of scenarios) {
          if (SCENARIOS[scenario.id].unguarded) unguarded ??= await startVariant(args, `${variant.id}-without-guardrails`, configOf(false), workDir);
          const targets = [
            ...(scenario.direct === false ? [] : [direct]),
            gatewayTarget,
            ...(SCENARIOS[scenario.id].unguarded && unguarded ? [{ ...unguarded.target, name: "unguarded" as const }] : []),
            ...(scenario.bare ? [bareTarget] : []),
            ...(scenario.floor ? [floorTarget] : []),
          ];
          results.rows.push(...(await runScenario(context, SCENARIOS[scenario.id], targets, scenario.loads)));
        }
        if (uploads) {
          for (
            const [name, target, path, check] of [
              ["sync proxy", direct, PATHS.upload, mockAnswered],
              ["sync proxy", bareTarget, PATHS.upload, mockAnswered],
              ["sync proxy", gateway.target, PATHS.upload, mockAnswered],
              ["async submission", gateway.target, PATHS.jobs, jobAccepted],
            ] as const
          ) {
            const result = await uploadOnce(target, path, MODELS.upload, check);
            results.uploads.push({ name, target: target.name, ...result });
            log(
              `  upload 100 MiB, ${name}, ${target.name}: +${result.growthMb.toFixed(0)} MB RSS, ${result.seconds.toFixed(2)} s, ${
                result.ok ? "ok" : `WRONG (status ${result.status})`
              }`,
            );
          }
        }
      } catch (error) {
        throw crashed(gateway.service, error);
      } finally {
        await unguarded?.service.stop();
        await gateway.service.stop();
        rmSync(objectDir, { recursive: true, force: true });
      }
    }

    if (selected(args, "async", "jobs")) {
      const objectDir = mkdtempSync(join(workDir, "objects-"));
      const gateway = await startVariant(args, "async-relay", gatewayConfig({ production: false, relay: true, mockUrl, objectDir, redisAddr: "" }), workDir);
      results.plugins["async-relay"] = gateway.plugins;
      try {
        const jobs = await runJobsEndToEnd(gateway.target, args.quick ? 200 : 1000, 16);
        const direct = results.rows.find((r) => r.scenario === "upload-100k")?.figures.direct?.rps;
        results.jobs = { ...jobs, directUploadsPerSecond: direct };
        log(
          `  async end to end: ${jobs.jobsPerSecond.toFixed(0)} jobs/s, ${jobs.cpuUsPerJob.toFixed(0)} µs CPU/job, ${jobs.peakRssMb.toFixed(0)} MB, wrong ${
            jobs.errors + jobs.invalid
          }`,
        );
      } finally {
        await gateway.service.stop();
        rmSync(objectDir, { recursive: true, force: true });
      }
    }

    if (selected(args, "batches")) {
      const objectDir = mkdtempSync(join(workDir, "objects-"));
      const gateway = await startVariant(
        args,
        "batches",
        // Batch lines run where the relay runs: the embedded one here.
        gatewayConfig({ production: false, relay: true, mockUrl, objectDir, redisAddr: "", batchConcurrency: 16 }),
        workDir,
      );
      results.plugins.batches = gateway.plugins;
      try {
        const batch = await runBatchEndToEnd(gateway.target, args.quick ? 2000 : 10_000);
        results.batches = batch;
        log(
          `  batch end to end: ${batch.linesPerSecond.toFixed(0)} lines/s, ${batch.cpuUsPerLine.toFixed(0)} µs CPU/line (interactive: ${
            batch.interactive.cpuUsPerRequest.toFixed(0)
          } µs/request), ${batch.peakRssMb.toFixed(0)} MB; ` +
            `interactive p50/p99 ${batch.interactive.p50Ms.toFixed(1)}/${batch.interactive.p99Ms.toFixed(1)} ms alone, ${
              batch.interactiveDuringBatch.p50Ms.toFixed(1)
            }/${batch.interactiveDuringBatch.p99Ms.toFixed(1)} ms during the batch; wrong ${batch.errors}`,
        );
      } catch (error) {
        throw crashed(gateway.service, error);
      } finally {
        await gateway.service.stop();
        rmSync(objectDir, { recursive: true, force: true });
      }
    }
  } finally {
    for (const service of services.reverse()) await service.stop();
    rmSync(workDir, { recursive: true, force: true });
  }

  results.wrong = results.rows.reduce((sum, row) => sum + Object.values(row.figures).reduce((s, f) => s + f.errors + f.invalid, 0), 0) +
    (results.jobs ? results.jobs.errors + results.jobs.invalid : 0) +
    (results.batches ? results.batches.errors + results.batches.interactive.errors + results.batches.interactiveDuringBatch.errors : 0) +
    results.uploads.filter((u) => !u.ok).length;
  const otherPath = join(resultsDir, `latest-${args.runtime === "node" ? "deno" : "node"}.json`);
  const other = existsSync(otherPath) ? (JSON.parse(readFileSync(otherPath, "utf8")) as Results) : undefined;
  results.targets = checkTargets(results, other);
  results.guards = checkGuards(results, readGuards(GUARDS_PATH));

  const text = printAll(results);
  process.stdout.write(`\n${text}\n`);
  mkdirSync(resultsDir, { recursive: true });
  const json = `${JSON.stringify(results, null, 2)}\n`;
  writeFileSync(join(resultsDir, "latest.json"), json);
  writeFileSync(join(resultsDir, `latest-${args.runtime}.json`), json);
  writeFileSync(join(resultsDir, "latest.md"), `${text}\n`);
  if (!args.quick && args.only.length === 0) writeFileSync(join(resultsDir, `${args.runtime}-${results.date.slice(0, 10)}.json`), json);
  if (results.wrong > 0) {
    log(`\n${results.wrong} wrong answers (unexpected status, transport error or wrong body): see the "wrong" columns`);
    return 1;
  }
  const failed = results.guards.filter((g) => g.met === false);
  if (failed.length > 0) {
    log(
      `\n${failed.length} failed guards (a regression, or a machine too busy to measure: see "core 0 busy with others"): ${
        failed.map((g) => g.row).join(", ")
      }`,
    );
    return 3;
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error));
    process.exit(2);
  },
);
