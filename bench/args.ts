/** `npm run bench -- [--quick] [--runtime node|deno] [--loadgen wrk|autocannon] [--only WORDS] [--cpu-prof] [--log-level LEVEL] [--report FILE [--compare FILE] [--set-guards]]` */
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
  /** With `report`: the other runtime's results file, for the Deno vs Node target. */
  compare?: string;
  /** With `report`: make that file's figures the guards of its runtime (bench/guards.json). */
  setGuards: boolean;
}

export const USAGE = `npm run bench -- [options]
  --quick                 a few seconds per scenario (iteration); default: the full run (~10 min)
  --runtime node|deno     the gateway's runtime (default node)
  --loadgen wrk|autocannon  closed-loop generator (default: wrk when installed)
  --only a,b+c            only the parts whose names contain a, or both b and c (scenario, variant, "async", "upload")
  --cpu-prof              write a .cpuprofile of each Node gateway to bench/results/profiles/
  --log-level LEVEL       the gateway's LOG_LEVEL
  --report FILE           print the tables of a results file (bench/results/*.json), its targets judged anew, and exit
  --compare FILE          with --report: the other runtime's results file, for the Deno vs Node target
  --set-guards            with --report: that file's 32-connection figures become the guards of its runtime (bench/guards.json)`;

/** Walks a command line for an option parser; its errors carry the command's usage text. */
export class ArgvReader {
  private index = -1;
  constructor(
    private readonly argv: readonly string[],
    private readonly usage: string,
  ) {}

  /** The next option, or undefined at the end. */
  next(): string | undefined {
    return this.argv[++this.index];
  }

  /** The value of `option`, the next word. */
  value(option: string): string {
    const value = this.argv[++this.index];
    if (value === undefined) throw new Error(`${option} needs a value\n${this.usage}`);
    return value;
  }

  choice<T extends string>(option: string, choices: readonly T[]): T {
    const value = this.value(option);
    if (!(choices as readonly string[]).includes(value)) throw new Error(`${option} must be ${choices.join(" or ")}\n${this.usage}`);
    return value as T;
  }

  positive(option: string): number {
    const number = Number(this.value(option));
    if (!(number > 0)) throw new Error(`${option} must be a positive number\n${this.usage}`);
    return number;
  }

  /** The error for an option the parser does not know (the usage itself for --help). */
  unknown(option: string): Error {
    return new Error(option === "--help" || option === "-h" ? this.usage : `unknown option ${option}\n${this.usage}`);
  }
}

export function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = { quick: false, runtime: "node", only: [], cpuProf: false, setGuards: false };
  const reader = new ArgvReader(argv, USAGE);
  for (let arg = reader.next(); arg !== undefined; arg = reader.next()) {
    if (arg === "--quick") args.quick = true;
    else if (arg === "--runtime") args.runtime = reader.choice(arg, ["node", "deno"] as const);
    else if (arg === "--loadgen") args.loadgen = reader.choice(arg, ["wrk", "autocannon"] as const);
    else if (arg === "--only") args.only = reader.value(arg).split(",").filter(Boolean);
    else if (arg === "--cpu-prof") args.cpuProf = true;
    else if (arg === "--log-level") args.logLevel = reader.value(arg);
    else if (arg === "--report") args.report = reader.value(arg);
    else if (arg === "--compare") args.compare = reader.value(arg);
    else if (arg === "--set-guards") args.setGuards = true;
    else throw reader.unknown(arg);
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
