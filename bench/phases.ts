/**
 * `node dist/bench/phases.js [--config basic|prod-memory|prod-redis] [--scenario ID] [--seconds N] [--rounds N]`
 * (built by `npm run bench`): where the added latency of a request at a fixed 100 requests/s
 * goes, in the gateway and in the framework floor side by side. Both run pinned to core 0 with
 * `bench/phase-timer.ts` loaded, which splits each request into the server's work before its
 * backend request is on the wire, the backend's time, and the server's work after the backend's
 * answer head until the client's answer is written (p50 and p90 over every round). The difference
 * between the two rows is the gateway's own work on the request's path, which is what the
 * latency targets (docs/design.md#performance-targets) measure; CPU per request (`npm run bench`)
 * also counts what runs off that path (cache fill, usage batching, garbage collection).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ArgvReader } from "./args.ts";
import { gatewayConfig } from "./config.ts";
import { redisInstalled, repoRoot, startFlags, startGateway, startRedis } from "./gateway.ts";
import { runOpenLoop } from "./load/open-loop.ts";
import { percentile } from "./load/spec.ts";
import { specFor } from "./matrix.ts";
import type { Target } from "./measure.ts";
import type { PhaseSample } from "./phase-timer.ts";
import { listeningPort, OTHER_CORE, pinProcess, SERVER_CORE, type Service, spawnService } from "./procs.ts";
import { type ScenarioId, SCENARIOS } from "./scenarios.ts";

const USAGE = `node dist/bench/phases.js [options]
  --config basic|prod-memory|prod-redis   the gateway's config (default basic; see bench/config.ts)
  --scenario sync-json|llm-miss|stream|upload-100k   what is sent (default llm-miss)
  --seconds N   length of each measured run at 100 requests/s (default 10)
  --rounds N    gateway and floor runs, alternating (default 3)`;

const CONFIGS = ["basic", "prod-memory", "prod-redis"] as const;
/** Scenarios whose every request reaches the backend (a cache hit never does). */
const SCENARIO_IDS = ["sync-json", "llm-miss", "stream", "upload-100k"] as const;
const RATE = 100;
const WARMUP_SECONDS = 3;

interface Options {
  config: (typeof CONFIGS)[number];
  scenario: ScenarioId;
  seconds: number;
  rounds: number;
}

function parse(argv: readonly string[]): Options {
  const options: Options = { config: "basic", scenario: "llm-miss", seconds: 10, rounds: 3 };
  const reader = new ArgvReader(argv, USAGE);
  for (let arg = reader.next(); arg !== undefined; arg = reader.next()) {
    if (arg === "--config") options.config = reader.choice(arg, CONFIGS);
    else if (arg === "--scenario") options.scenario = reader.choice(arg, SCENARIO_IDS);
    else if (arg === "--seconds") options.seconds = reader.positive(arg);
    else if (arg === "--rounds") options.rounds = Math.max(1, Math.round(reader.positive(arg)));
    else throw reader.unknown(arg);
  }
  return options;
}

interface Timed {
  target: Target;
  service: Service;
  phasesFile: string;
}

/** The samples the server's phase timer gathered since the last call (it rewrites the file on SIGUSR2). */
async function collect(timed: Timed): Promise<PhaseSample[]> {
  rmSync(timed.phasesFile, { force: true });
  process.kill(timed.service.pid, "SIGUSR2");
  const deadline = Date.now() + 10_000;
  while (!existsSync(timed.phasesFile)) {
    if (Date.now() > deadline) throw new Error(`${timed.service.name} wrote no phases to ${timed.phasesFile}:\n${timed.service.output().slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return JSON.parse(readFileSync(timed.phasesFile, "utf8")) as PhaseSample[];
}

const microseconds = (values: number[], p: number) => percentile([...values].sort((a, b) => a - b), p).toFixed(0);

function row(name: string, samples: PhaseSample[], clientMs: number[]): string {
  const figures = (["before", "backend", "after"] as const).map((phase) => {
    const values = samples.map((s) => s[phase]);
    return `${microseconds(values, 50)} / ${microseconds(values, 90)}`;
  });
  const server = samples.map((s) => s.before + s.after);
  return `| ${name} | ${samples.length} | ${figures.join(" | ")} | ${microseconds(server, 50)} / ${microseconds(server, 90)} | ${
    percentile([...clientMs].sort((a, b) => a - b), 50).toFixed(2)
  } |`;
}

async function main(): Promise<void> {
  const options = parse(process.argv.slice(2));
  pinProcess(process.pid, OTHER_CORE);
  const workDir = mkdtempSync(join(tmpdir(), "gateway-phases-"));
  const services: Service[] = [];
  const preload = `--import=${join(repoRoot, "dist/bench/phase-timer.js")}`;
  try {
    const mock = spawnService("mock backend", [process.execPath, join(repoRoot, "dist/bench/mock-backend.js"), "0"], { core: OTHER_CORE });
    services.push(mock);
    const mockUrl = `http://127.0.0.1:${await listeningPort(mock)}`;

    let redisAddr = "";
    if (options.config === "prod-redis") {
      if (!redisInstalled()) throw new Error("--config prod-redis needs redis-server (apt-get install redis-server)");
      const redis = await startRedis(workDir);
      services.push(redis.service);
      redisAddr = redis.addr;
    }
    const production = options.config !== "basic";
    const configPath = join(workDir, "gateway.yaml");
    writeFileSync(configPath, gatewayConfig({ mockUrl, objectDir: join(workDir, "objects"), production, redisAddr, relay: false }));

    const gatewayPhases = join(workDir, "gateway-phases.json");
    const gateway = await startGateway({ runtime: "node", name: "gateway", configPath, runtimeFlags: [preload], env: { PHASES_FILE: gatewayPhases } });
    services.push(gateway.service);
    const floorPhases = join(workDir, "floor-phases.json");
    const floor = spawnService("framework floor", [
      process.execPath,
      ...startFlags("node"),
      preload,
      join(repoRoot, "dist/bench/framework-floor.js"),
      "0",
      mockUrl,
    ], {
      core: SERVER_CORE,
      env: { PHASES_FILE: floorPhases },
    });
    services.push(floor);
    const timed: Timed[] = [
      { target: gateway.target, service: gateway.service, phasesFile: gatewayPhases },
      { target: { name: "floor", base: `http://127.0.0.1:${await listeningPort(floor)}`, pid: floor.pid }, service: floor, phasesFile: floorPhases },
    ];

    const scenario = SCENARIOS[options.scenario];
    const consumers = production ? { consumers: 50 } : undefined;
    const samples = new Map<string, PhaseSample[]>(timed.map((t) => [t.target.name, []]));
    const clientMs = new Map<string, number[]>(timed.map((t) => [t.target.name, []]));
    for (const t of timed) {
      await runOpenLoop(specFor(scenario, t.target, consumers), RATE, WARMUP_SECONDS);
      await collect(t);
    }
    let wrong = 0;
    for (let round = 0; round < options.rounds; round++) {
      // Each round starts with the other target, so drift in the machine's speed hits both alike.
      for (const t of round % 2 === 0 ? timed : [...timed].reverse()) {
        const result = await runOpenLoop(specFor(scenario, t.target, consumers), RATE, options.seconds);
        wrong += result.errors + result.invalid;
        clientMs.get(t.target.name)?.push(result.p50Ms);
        samples.get(t.target.name)?.push(...(await collect(t)));
        process.stderr.write(`round ${round + 1}, ${t.target.name}: p50 ${result.p50Ms.toFixed(2)} ms\n`);
      }
    }

    process.stdout.write(
      `\n${scenario.title}, ${options.config} config, ${RATE} requests/s, ${options.rounds} x ${options.seconds} s per target; µs p50 / p90 of requests alone in the server\n\n`,
    );
    process.stdout.write(
      `| server | requests | before the backend request | backend | after the backend's answer head | server's own (before + after) | client p50 ms (median of rounds) |\n|---|---|---|---|---|---|---|\n`,
    );
    for (const t of timed) {
      process.stdout.write(
        `${row(t.target.name === "floor" ? "framework floor" : "gateway", samples.get(t.target.name) ?? [], clientMs.get(t.target.name) ?? [])}\n`,
      );
    }
    if (wrong > 0) {
      process.stderr.write(`${wrong} wrong answers (status or body)\n`);
      process.exitCode = 1;
    }
  } finally {
    for (const service of services.reverse()) await service.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(2);
});
