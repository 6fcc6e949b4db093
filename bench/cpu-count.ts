/**
 * `node dist/bench/cpu-count.js [--config basic|prod-memory|prod-redis] [--scenario llm-miss|llm-hit|stream|stream-miss|sync-json|sync-stream|upload-100k|submit-100k|guard-input-2k|guard-input-2k-typical|guard-stream-out|growth] [--models N] [--consumers N] [--cache-streams]
 * [--requests N] [--rounds N] [--connections N] [--cpu-prof DIR] [--latency] [--together] [--runtime node|deno] [--compare DIR] [--compare-flags "..."]` (built by `npm run bench`):
 * CPU time per request of the gateway and of the framework floor, measured so that a busy
 * machine does not distort it. Each server gets a fixed number of requests (not a fixed time),
 * `connections` at a time, and the figure is the server process's utime + stime (all threads,
 * /proc/<pid>/stat) over those requests: time other processes take from the core delays the
 * answers but is not counted. Rounds alternate between the two servers; the median is
 * reported. Wall-clock figures (requests/s, latency) are not reported: on a shared machine
 * they measure the neighbours. `--latency` adds each server's p50/p99 over the requests of its
 * rounds, to compare servers measured in the same run (the neighbours hit them alike). The
 * guardrail scenarios also send the same requests to a gateway of the same config without its
 * guardrails, in the same rounds, and print the rules' cost as a ratio of the two.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pool } from "undici";
import { ArgvReader } from "./args.ts";
import { gatewayConfig } from "./config.ts";
import { denoBinary, repoRoot, type Runtime, startFlags, startGateway, startSideServices } from "./gateway.ts";
import { type Population, specFor } from "./matrix.ts";
import type { TargetName } from "./measure.ts";
import { CONSUMER_HEADER, consumerOf, isValid, type RequestSpec, withRandomModel } from "./load/spec.ts";
import { BOTH_CORES, cpuSeconds, listeningPort, memory, OTHER_CORE, pinProcess, processTree, SERVER_CORE, type Service, spawnService } from "./procs.ts";
import { SCENARIOS } from "./scenarios.ts";

const USAGE = `node dist/bench/cpu-count.js [options]
  --config basic|prod-memory|prod-redis   the gateway's config (default prod-memory)
  --runtime node|deno   the gateway's runtime (default node; the floor runs on Node; --cpu-prof is Node's)
  --scenario llm-miss|llm-hit|stream|stream-miss|sync-json|sync-stream|upload-100k|submit-100k|guard-input-2k|guard-input-2k-typical|guard-stream-out|growth
                   what is sent (default llm-miss); guard-*: also "gateway without rules", the same requests
                   to another gateway of the same config without its guardrails, in the same rounds
                   (each --compare build too)
  --models N       LLM services on the chat path (growth: each request's model drawn at random; default 1)
  --first-row      growth: also a gateway of 1 model sent 1 consumer's requests (the growth table's first
                   row), in the same rounds, and the median of the rounds' ratios to it
  --workers N      server.workers (with --config prod-redis): the gateway on both cores, charged with its primary and workers
  --consumers N    X-Consumer over N consumers in the prod configs (default 50; above 50, or with --models, drawn at random)
  --chunk-delay-ms N  the mock backend spaces a stream's events N ms apart (default: one event-loop turn),
                   so every event reaches both proxies as a chunk of its own, as tokens with think time do
  --deno-floor     the framework floor on Deno (bench/deno-floor/framework-floor.ts: Deno.serve, fetch, a
                   stream passed on chunk by chunk in JavaScript) instead of Node's: what the runtime alone costs
  --cache-streams  llm.cache_streams on (with stream-miss: every stream a miss the cache records)
  --requests N     requests per round and server (default 20000)
  --rounds N       rounds per server, alternating (default 3)
  --connections N  requests in flight (default 32)
  --cpu-prof DIR   run the gateway with --cpu-prof, profiles written to DIR
  --flags "..."    more runtime flags for the gateway (--heap-prof, --trace-gc ...)
  --together       a gateway and the one it is compared with (without rules, --first-row) are sent their
                   requests at the same time, each its own connections: a change in the machine's speed
                   during a round hits both alike (their ratio), not one of them
  --latency        also print each server's p50/p99 latency over its rounds (wall clock: compare within a run)
  --compare DIR    also run the gateway built in another checkout DIR (DIR/dist/adapters/node/main.js)
                   in the same rounds: an A/B of two builds under the same machine load (repeatable)
  --compare-flags "..."  also run this build with these runtime flags added, in the same rounds: an A/B of
                   V8 settings (repeatable; each server's peak RSS is printed too)`;

const CONFIGS = ["basic", "prod-memory", "prod-redis"] as const;
const SCENARIO_IDS = [
  "llm-miss",
  "llm-hit",
  "stream",
  "stream-miss",
  "sync-json",
  "sync-stream",
  "upload-100k",
  "submit-100k",
  "guard-input-2k",
  "guard-input-2k-typical",
  "guard-stream-out",
  "growth",
] as const;

interface Options {
  runtime: Runtime;
  config: (typeof CONFIGS)[number];
  scenario: (typeof SCENARIO_IDS)[number];
  requests: number;
  rounds: number;
  connections: number;
  cpuProf?: string;
  compare: string[];
  compareFlags: string[][];
  flags: string[];
  cacheStreams: boolean;
  chunkDelayMs?: number;
  firstRow: boolean;
  denoFloor: boolean;
  latency: boolean;
  together: boolean;
  models: number;
  consumers: number;
  workers?: number;
}

function parse(argv: readonly string[]): Options {
  const options: Options = {
    runtime: "node",
    config: "prod-memory",
    scenario: "llm-miss",
    requests: 20_000,
    rounds: 3,
    connections: 32,
    flags: [],
    compare: [],
    compareFlags: [],
    cacheStreams: false,
    firstRow: false,
    denoFloor: false,
    latency: false,
    together: false,
    models: 1,
    consumers: 50,
  };
  const reader = new ArgvReader(argv, USAGE);
  for (let arg = reader.next(); arg !== undefined; arg = reader.next()) {
    if (arg === "--config") options.config = reader.choice(arg, CONFIGS);
    else if (arg === "--runtime") options.runtime = reader.choice(arg, ["node", "deno"] as const);
    else if (arg === "--scenario") options.scenario = reader.choice(arg, SCENARIO_IDS);
    else if (arg === "--requests") options.requests = Math.round(reader.positive(arg));
    else if (arg === "--rounds") options.rounds = Math.max(1, Math.round(reader.positive(arg)));
    else if (arg === "--connections") options.connections = Math.max(1, Math.round(reader.positive(arg)));
    else if (arg === "--cpu-prof") options.cpuProf = reader.value(arg);
    else if (arg === "--flags") options.flags = reader.value(arg).split(/\s+/).filter(Boolean);
    else if (arg === "--compare") options.compare.push(reader.value(arg));
    else if (arg === "--compare-flags") options.compareFlags.push(reader.value(arg).split(/\s+/).filter(Boolean));
    else if (arg === "--cache-streams") options.cacheStreams = true;
    else if (arg === "--chunk-delay-ms") options.chunkDelayMs = reader.positive(arg);
    else if (arg === "--models") options.models = Math.round(reader.positive(arg));
    else if (arg === "--consumers") options.consumers = Math.round(reader.positive(arg));
    else if (arg === "--workers") options.workers = Math.round(reader.positive(arg));
    else if (arg === "--latency") options.latency = true;
    else if (arg === "--together") options.together = true;
    else if (arg === "--first-row") options.firstRow = true;
    else if (arg === "--deno-floor") options.denoFloor = true;
    else throw reader.unknown(arg);
  }
  if (options.workers && options.config !== "prod-redis") throw new Error(`--workers needs --config prod-redis (the embedded store refuses workers)\n${USAGE}`);
  if (options.firstRow && (options.scenario !== "growth" || options.config === "basic")) {
    throw new Error(`--first-row goes with --scenario growth and a prod config (basic has no consumers)\n${USAGE}`);
  }
  if (options.cpuProf && options.runtime === "deno") throw new Error(`--cpu-prof profiles a Node gateway; drop it or --runtime deno\n${USAGE}`);
  return options;
}

interface Counted {
  name: string;
  pid: number;
  base: string;
  /** What the scenario sends it (default "gateway"). */
  as?: TargetName;
  /** The guardrail scenarios: the name of its gateway without rules, sent the same requests. */
  withoutRules?: string;
  /** --first-row: the name of the gateway of the growth table's first row, measured in the same rounds. */
  firstRow?: string;
  /** Who sends its requests, when not the run's (the first row's one model and one consumer). */
  population?: Population;
}

/** --together: each target with the one it is compared with (without rules, the first row) in a group of two; the rest alone. */
function comparedTogether(targets: readonly Counted[]): Counted[][] {
  const grouped = new Set<string>();
  const groups: Counted[][] = [];
  for (const t of targets) {
    if (grouped.has(t.name)) continue;
    const partner = targets.find((other) => other.name === (t.withoutRules ?? t.firstRow));
    const group = partner ? [t, partner] : [t];
    for (const member of group) grouped.add(member.name);
    groups.push(group);
  }
  return groups;
}

let sequence = 0;

/** Sends `count` requests, `connections` at a time; returns the wrong answers. Each request's ms go to `latencies` if given. */
async function send(spec: RequestSpec, count: number, connections: number, latencies?: number[]): Promise<number> {
  const url = new URL(spec.url);
  const pool = new Pool(url.origin, { connections, pipelining: 1 });
  const text = spec.body.toString();
  let started = 0;
  let wrong = 0;
  const worker = async () => {
    while (started < count) {
      started++;
      const n = sequence++;
      // A binary body (the uploads) is sent as it is.
      const body = spec.uniqueMarker || spec.models
        ? withRandomModel(spec, spec.uniqueMarker ? text.replace(spec.uniqueMarker, `${process.pid}-${n}`) : text)
        : spec.body;
      const headers: Record<string, string> = { ...spec.headers };
      const consumer = consumerOf(spec, n);
      if (consumer) headers[CONSUMER_HEADER] = consumer;
      try {
        const sent = performance.now();
        const answer = await pool.request({ path: url.pathname, method: spec.method, headers, body });
        if (isValid(spec, answer.statusCode, await answer.body.text()) !== "ok") wrong++;
        latencies?.push(performance.now() - sent);
      } catch {
        wrong++;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  await pool.close();
  return wrong;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];

async function main(): Promise<void> {
  const options = parse(process.argv.slice(2));
  pinProcess(process.pid, OTHER_CORE);
  const workDir = mkdtempSync(join(tmpdir(), "gateway-cpu-count-"));
  const services: Service[] = [];
  try {
    const { mockUrl, redisAddr } = await startSideServices(workDir, options.config, services, options.chunkDelayMs);
    const production = options.config !== "basic";
    const configOf = (guardrails: boolean, models = options.models) =>
      gatewayConfig({
        mockUrl,
        objectDir: join(workDir, "objects"),
        production,
        redisAddr,
        relay: false,
        cacheStreams: options.cacheStreams,
        models,
        workers: options.workers,
        guardrails,
      });
    const configPath = join(workDir, "gateway.yaml");
    writeFileSync(configPath, configOf(true));
    // The guardrail scenarios' baseline: the same config without its guardrails.
    const unguardedPath = join(workDir, "gateway-without-guardrails.yaml");
    writeFileSync(unguardedPath, configOf(false));
    const profFlags = options.cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${options.cpuProf}`] : [];
    const gateway = await startGateway({
      runtime: options.runtime,
      name: "gateway",
      configPath,
      runtimeFlags: [...profFlags, ...options.flags],
      core: options.workers ? BOTH_CORES : undefined,
    });
    services.push(gateway.service);
    const floorArgv = options.denoFloor
      ? [denoBinary, "run", ...startFlags("deno"), "--allow-all", join(repoRoot, "bench/deno-floor/framework-floor.ts"), "0", mockUrl]
      : [process.execPath, ...startFlags("node"), join(repoRoot, "dist/bench/framework-floor.js"), "0", mockUrl];
    const floor = spawnService("framework floor", floorArgv, { core: SERVER_CORE, cwd: repoRoot });
    services.push(floor);
    const scenario = SCENARIOS[options.scenario];
    // A gateway, and for the guardrail scenarios another process of the same build without its rules, sent the same requests.
    const withTwin = async (name: string, pid: number, base: string, root?: string, runtimeFlags?: string[]): Promise<Counted[]> => {
      if (!scenario.unguarded) return [{ name, pid, base }];
      const twin = `${name} without rules`;
      const other = await startGateway({ runtime: options.runtime, name: twin, configPath: unguardedPath, root, runtimeFlags });
      services.push(other.service);
      return [{ name, pid, base, withoutRules: twin }, { name: twin, pid: other.service.pid, base: other.target.base, as: "unguarded" }];
    };
    const targets: Counted[] = [
      // With --cpu-prof both are profiled: their profiles compare function by function.
      ...(await withTwin("gateway", gateway.service.pid, gateway.target.base, undefined, [...profFlags, ...options.flags])),
      { name: "framework floor", pid: floor.pid, base: `http://127.0.0.1:${await listeningPort(floor)}`, as: "floor" as const },
    ];
    if (options.firstRow) {
      // The same build and flags with one model, sent one consumer's requests: the growth as a ratio within each round.
      const name = "gateway of 1 model and 1 consumer";
      const firstRowPath = join(workDir, "gateway-first-row.yaml");
      writeFileSync(firstRowPath, configOf(true, 1));
      const other = await startGateway({ runtime: options.runtime, name, configPath: firstRowPath, runtimeFlags: [...profFlags, ...options.flags] });
      services.push(other.service);
      targets[0].firstRow = name;
      targets.push({ name, pid: other.service.pid, base: other.target.base, population: { consumers: 1, random: false, models: 1 } });
    }
    for (const root of options.compare) {
      const other = await startGateway({ runtime: options.runtime, name: `gateway of ${root}`, configPath, root });
      services.push(other.service);
      targets.push(...(await withTwin(`gateway of ${root}`, other.service.pid, other.target.base, root)));
    }
    for (const flags of options.compareFlags) {
      const name = `gateway with ${flags.join(" ")}`;
      const other = await startGateway({ runtime: options.runtime, name, configPath, runtimeFlags: [...options.flags, ...flags] });
      services.push(other.service);
      targets.push({ name, pid: other.service.pid, base: other.target.base });
    }
    const population: Population | undefined = production
      ? { consumers: options.consumers, random: options.models > 1 || options.consumers > 50, models: options.models }
      : undefined;
    const specOf = (t: Counted) => specFor(scenario, { name: t.as ?? "gateway", base: t.base, pid: t.pid }, t.population ?? population);
    let wrong = 0;
    // Warm-up: JIT, pools, the cache entry of a hit.
    for (const t of targets) wrong += await send(specOf(t), Math.min(5000, options.requests), options.connections);
    const figures = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const latencies = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    // With workers: the primary and its workers together.
    const cpuOf = (
      pid: number,
    ) => (options.workers && pid === gateway.service.pid ? processTree(pid).reduce((sum, p) => sum + cpuSeconds(p), 0) : cpuSeconds(pid));
    const groups = options.together ? comparedTogether(targets) : targets.map((t) => [t]);
    for (let round = 0; round < options.rounds; round++) {
      // Each round starts with another group, so drift in the machine's load hits all alike.
      for (const group of [...groups.slice(round % groups.length), ...groups.slice(0, round % groups.length)]) {
        const before = group.map((t) => cpuOf(t.pid));
        const sent = await Promise.all(
          group.map((t) => send(specOf(t), options.requests, options.connections, options.latency ? latencies.get(t.name) : undefined)),
        );
        group.forEach((t, i) => {
          wrong += sent[i];
          const perRequest = ((cpuOf(t.pid) - before[i]) * 1e6) / options.requests;
          figures.get(t.name)?.push(perRequest);
          process.stderr.write(`round ${round + 1}, ${t.name}: ${perRequest.toFixed(0)} µs/req\n`);
        });
      }
    }
    const floorFigure = median(figures.get("framework floor") ?? []);
    // The rules' cost, the growth: the median of each round's ratio (both sent in the same round, so under much the same load).
    const roundRatios = (all: number[], other: number[], what: string) => {
      const ratios = all.map((v, i) => v / other[i]);
      return `, ${median(ratios).toFixed(2)}x ${what} (median of the rounds' ${ratios.map((r) => r.toFixed(2)).join(", ")})`;
    };
    const parts = targets.map((t) => {
      const all = figures.get(t.name) ?? [];
      const ratio = (t.as === "floor" ? "" : `, ${(median(all) / floorFigure).toFixed(2)}x the floor`) +
        (t.withoutRules ? roundRatios(all, figures.get(t.withoutRules) ?? [], "without rules") : "") +
        (t.firstRow ? roundRatios(all, figures.get(t.firstRow) ?? [], "the first row") : "");
      const sorted = (latencies.get(t.name) ?? []).sort((a, b) => a - b);
      const latency = options.latency ? `, p50 ${percentile(sorted, 50).toFixed(2)} ms p99 ${percentile(sorted, 99).toFixed(2)} ms` : "";
      const peak = options.compareFlags.length > 0 ? `, peak RSS ${memory(t.pid).peakMb.toFixed(0)} MB` : "";
      return `${t.name} ${median(all).toFixed(0)} µs/req (min ${Math.min(...all).toFixed(0)}) [${
        all.map((v) => v.toFixed(0)).join(", ")
      }]${ratio}${latency}${peak}`;
    });
    process.stdout.write(
      `${scenario.title}, ${options.config}, ${options.connections} connections, ${options.rounds} x ${options.requests} requests: ${parts.join("; ")}\n`,
    );
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
