/**
 * One measured round against one target: the load, and around it the CPU time and peak
 * memory of the process that serves the target (the gateway, the bare proxy, the framework
 * floor, or for the direct baseline the mock backend itself).
 */
import { runAutocannon } from "./load/autocannon.ts";
import { runOpenLoop } from "./load/open-loop.ts";
import { type ClosedLoopResult, type OpenLoopResult, percentile, type RequestSpec } from "./load/spec.ts";
import { runWrk } from "./load/wrk.ts";
import { performance } from "node:perf_hooks";
import { coreBusySeconds, cpuSeconds, memory, processTree, resetPeak, RssSampler, SERVER_CORE } from "./procs.ts";

/**
 * `floor`: the framework floor (bench/framework-floor.ts), next to `bare`, the node:http proxy.
 * `unguarded`: a gateway of the same config without its guardrails, sent the same request (the
 * baseline of the guardrail scenarios, bench/scenarios.ts).
 */
export type TargetName = "direct" | "gateway" | "unguarded" | "bare" | "floor";

export interface Target {
  name: TargetName;
  /** Base address, e.g. http://127.0.0.1:8080. */
  base: string;
  /** The process whose CPU and memory this target is charged. */
  pid: number;
  /**
   * Charge the process and its children (a primary and its `server.workers`), which run on
   * either core: the server core's "busy with others" is not measured.
   */
  tree?: boolean;
}

export type LoadGenerator = "wrk" | "autocannon";

export interface Round<R extends ClosedLoopResult = ClosedLoopResult> {
  result: R;
  cpuSeconds: number;
  peakRssMb: number;
  /** Share of the server core (0-1) that other processes used during the round (the machine was not quiet). */
  foreignLoad: number;
  /** With `tree`: the CPU seconds of the children alone (the workers), and how many there were. */
  childCpuSeconds?: number;
  children?: number;
}

/** CPU seconds of each process of the target (one, or the tree). */
function cpuByProcess(target: Target): Map<number, number> {
  const pids = target.tree ? processTree(target.pid) : [target.pid];
  const cpu = new Map<number, number>();
  for (const pid of pids) {
    try {
      cpu.set(pid, cpuSeconds(pid));
    } catch {
      // Exited meanwhile.
    }
  }
  return cpu;
}

/** The peak RSS of a tree: the sum of each process's own (an upper bound of the tree's at one moment). */
function treePeakMb(pid: number): number {
  return processTree(pid).reduce((sum, p) => {
    try {
      return sum + memory(p).peakMb;
    } catch {
      return sum;
    }
  }, 0);
}

async function around<R extends ClosedLoopResult>(target: Target, run: () => Promise<R>): Promise<Round<R>> {
  const { pid } = target;
  const exact = target.tree ? processTree(pid).every(resetPeak) : resetPeak(pid);
  const sampler = new RssSampler(pid);
  if (!target.tree) sampler.start();
  const onServerCore = target.name !== "direct" && !target.tree;
  const coreBefore = onServerCore ? coreBusySeconds(SERVER_CORE) : 0;
  const wallBefore = performance.now();
  const before = cpuByProcess(target);
  const result = await run();
  const after = cpuByProcess(target);
  let cpu = 0;
  let childCpu = 0;
  for (const [p, seconds] of after) {
    const used = seconds - (before.get(p) ?? 0);
    cpu += used;
    if (p !== pid) childCpu += used;
  }
  const wall = (performance.now() - wallBefore) / 1000;
  const foreign = onServerCore ? Math.max(0, coreBusySeconds(SERVER_CORE) - coreBefore - cpu) / wall : 0;
  const sampled = target.tree ? 0 : sampler.stop();
  const peak = target.tree ? treePeakMb(pid) : exact ? Math.max(memory(pid).peakMb, sampled) : sampled;
  return {
    result,
    cpuSeconds: cpu,
    peakRssMb: peak,
    foreignLoad: Number.isNaN(foreign) ? 0 : foreign,
    // With `workers: 1` there is no primary: the one process is the worker.
    ...(target.tree ? (after.size > 1 ? { childCpuSeconds: childCpu, children: after.size - 1 } : { childCpuSeconds: cpu, children: 1 }) : {}),
  };
}

export function closedRound(
  target: Target,
  spec: RequestSpec,
  connections: number,
  seconds: number,
  generator: LoadGenerator,
  repoRoot: string,
): Promise<Round> {
  return around(target, () => (generator === "wrk" ? runWrk(spec, connections, seconds, repoRoot) : runAutocannon(spec, connections, seconds)));
}

export function openRound(target: Target, spec: RequestSpec, rate: number, seconds: number): Promise<Round<OpenLoopResult>> {
  return around(target, () => runOpenLoop(spec, rate, seconds));
}

/** A target's figures over all rounds of one scenario and load. */
export interface Figures {
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  ttfbP50Ms?: number;
  ttfbP99Ms?: number;
  errors: number;
  invalid: number;
  /** CPU time of the serving process per answered request, in microseconds. */
  cpuUsPerRequest: number;
  peakRssMb: number;
  rounds: number;
  /** The worst share of the server core other processes took during a round (0-1); above ~0.05 the figures are disturbed. */
  foreignLoad: number;
  /** A tree target's children (the workers): their CPU per request together, and how many. */
  childCpuUsPerRequest?: number;
  children?: number;
}

const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);

function base(rounds: Round[]): Omit<Figures, "p50Ms" | "p99Ms" | "rps"> {
  const requests = rounds.reduce((sum, r) => sum + r.result.requests, 0);
  const cpu = rounds.reduce((sum, r) => sum + r.cpuSeconds, 0);
  const tree = rounds.length > 0 && rounds.every((r) => r.childCpuSeconds !== undefined);
  const childCpu = rounds.reduce((sum, r) => sum + (r.childCpuSeconds ?? 0), 0);
  return {
    ...(tree
      ? { childCpuUsPerRequest: requests > 0 ? (childCpu / requests) * 1e6 : Number.NaN, children: Math.max(...rounds.map((r) => r.children ?? 0)) }
      : {}),
    requests,
    errors: rounds.reduce((sum, r) => sum + r.result.errors, 0),
    invalid: rounds.reduce((sum, r) => sum + r.result.invalid, 0),
    cpuUsPerRequest: requests > 0 ? (cpu / requests) * 1e6 : Number.NaN,
    peakRssMb: Math.max(...rounds.map((r) => r.peakRssMb)),
    rounds: rounds.length,
    foreignLoad: Math.max(...rounds.map((r) => r.foreignLoad)),
  };
}

/** Closed loop: the median round (rates and percentiles cannot be merged from wrk's summaries). */
export function closedFigures(rounds: Round[]): Figures {
  return {
    ...base(rounds),
    rps: median(rounds.map((r) => r.result.requests / r.result.seconds)),
    p50Ms: median(rounds.map((r) => r.result.p50Ms)),
    p99Ms: median(rounds.map((r) => r.result.p99Ms)),
  };
}

/** Open loop: every request of every round in one distribution. */
export function openFigures(rounds: Round<OpenLoopResult>[]): Figures {
  const totals = rounds.flatMap((r) => r.result.totalsMs).sort((a, b) => a - b);
  const ttfbs = rounds.flatMap((r) => r.result.ttfbsMs).sort((a, b) => a - b);
  const seconds = rounds.reduce((sum, r) => sum + r.result.seconds, 0);
  const figures = base(rounds);
  return {
    ...figures,
    rps: figures.requests / seconds,
    p50Ms: percentile(totals, 50),
    p99Ms: percentile(totals, 99),
    ttfbP50Ms: percentile(ttfbs, 50),
    ttfbP99Ms: percentile(ttfbs, 99),
  };
}
