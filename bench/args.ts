/** `npm run bench -- [--quick] [--runtime node|deno] [--loadgen wrk|autocannon] [--only WORDS] [--cpu-prof] [--log-level LEVEL]` */
import type { LoadGenerator } from "./measure.ts";
import type { Timing } from "./matrix.ts";

export interface BenchArgs {
  quick: boolean;
  runtime: "node" | "deno";
  loadgen?: LoadGenerator;
  /** Run only the parts whose name contains one of these (e.g. "llm-miss", "prod-redis", "async"). */
  only: string[];
  /** Write a V8 CPU profile of each Node gateway process to bench/results/profiles/. */
  cpuProf: boolean;
  /** The gateway's LOG_LEVEL (default: its own default, info). */
  logLevel?: string;
  /** Print the tables of a results file instead of running. */
  report?: string;
}

export const USAGE = `npm run bench -- [options]
  --quick                 a few seconds per scenario (iteration); default: the full run (~10 min)
  --runtime node|deno     the gateway's runtime (default node)
  --loadgen wrk|autocannon  closed-loop generator (default: wrk when installed)
  --only a,b+c            only the parts whose names contain a, or both b and c (scenario, variant, "async", "upload")
  --cpu-prof              write a .cpuprofile of each Node gateway to bench/results/profiles/
  --log-level LEVEL       the gateway's LOG_LEVEL
  --report FILE           print the tables of a results file (bench/results/*.json) and exit`;

export function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = { quick: false, runtime: "node", only: [], cpuProf: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${arg} needs a value\n${USAGE}`);
      return next;
    };
    if (arg === "--quick") args.quick = true;
    else if (arg === "--runtime") {
      const runtime = value();
      if (runtime !== "node" && runtime !== "deno") throw new Error(`--runtime must be node or deno\n${USAGE}`);
      args.runtime = runtime;
    } else if (arg === "--loadgen") {
      const loadgen = value();
      if (loadgen !== "wrk" && loadgen !== "autocannon") throw new Error(`--loadgen must be wrk or autocannon\n${USAGE}`);
      args.loadgen = loadgen;
    } else if (arg === "--only") args.only = value().split(",").filter(Boolean);
    else if (arg === "--cpu-prof") args.cpuProf = true;
    else if (arg === "--log-level") args.logLevel = value();
    else if (arg === "--report") args.report = value();
    else if (arg === "--help" || arg === "-h") throw new Error(USAGE);
    else throw new Error(`unknown option ${arg}\n${USAGE}`);
  }
  return args;
}

export function timingFor(quick: boolean): Timing {
  return quick
    ? { warmupSeconds: 1, closedRounds: 1, closedSeconds: 2, openRounds: 1, openSeconds: 2, connections: 32, rate: 100 }
    : { warmupSeconds: 2, closedRounds: 3, closedSeconds: 3, openRounds: 2, openSeconds: 4, connections: 32, rate: 100 };
}

/**
 * True when the part named `names` is selected by `--only` (everything when it is empty):
 * some word matches one of the names; "a+b" matches when both a and b do.
 */
export function selected(args: BenchArgs, ...names: string[]): boolean {
  return args.only.length === 0 || args.only.some((word) => word.split("+").every((part) => names.some((name) => name.includes(part))));
}
