/**
 * The processes of a bench run: spawned pinned to a core where `taskset` exists, and read
 * from /proc while they run (CPU time, resident memory and its peak).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";

/** The core the measured server (gateway or bare proxy) runs on, and the one for everything else. */
export const SERVER_CORE = "0";
export const OTHER_CORE = "1";
/** Both: the gateway with `server.workers` (the load generator, mock and Redis share core 1 with it). */
export const BOTH_CORES = "0,1";

let tasksetChecked: boolean | undefined;

export function hasTaskset(): boolean {
  tasksetChecked ??= spawnSync("taskset", ["--version"]).status === 0;
  return tasksetChecked;
}

/** `argv` prefixed with `taskset -c CORE` when taskset exists. */
export function pinned(core: string, argv: readonly string[]): string[] {
  return hasTaskset() ? ["taskset", "-c", core, ...argv] : [...argv];
}

/** Moves a running process, all its threads included, to `core` (the bench runner pins itself this way). */
export function pinProcess(pid: number, core: string): boolean {
  return hasTaskset() && spawnSync("taskset", ["-a", "-p", "-c", core, String(pid)], { stdio: "ignore" }).status === 0;
}

const CLOCK_TICKS_PER_SECOND = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;

/** User + system CPU seconds the process (all threads) has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may contain spaces) start after the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** The process and its descendants (the workers of `server.workers`), from /proc/<pid>/task/<tid>/children. */
export function processTree(pid: number): number[] {
  const all = [pid];
  for (let i = 0; i < all.length; i++) {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${all[i]}/task`);
    } catch {
      continue; // exited meanwhile
    }
    for (const task of tasks) {
      try {
        for (const child of readFileSync(`/proc/${all[i]}/task/${task}/children`, "utf8").trim().split(/\s+/)) if (child) all.push(Number(child));
      } catch {
        // The thread ended meanwhile.
      }
    }
  }
  return all;
}

/** Busy CPU seconds of one core so far (all processes): user, nice, system, irq, softirq, steal. */
export function coreBusySeconds(core: string): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n").find((l) => l.startsWith(`cpu${core} `));
  if (!line) return Number.NaN;
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS_PER_SECOND;
}

export interface MemoryFigures {
  rssMb: number;
  /** Peak RSS since start or since the last `resetPeak`. */
  peakMb: number;
}

export function memory(pid: number): MemoryFigures {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return { rssMb: kb("VmRSS") / 1024, peakMb: kb("VmHWM") / 1024 };
}

/** Resets VmHWM to the current RSS (Linux 4.0+, writing 5 to clear_refs); false when not allowed. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/**
 * Samples VmRSS while a run lasts: the peak when VmHWM cannot be reset, and a cross-check
 * when it can (a sample can only be lower than the true peak).
 */
export class RssSampler {
  private timer?: ReturnType<typeof setInterval>;
  peakMb = 0;

  constructor(private readonly pid: number) {}

  start(everyMs = 50): void {
    this.peakMb = 0;
    const sample = () => {
      try {
        this.peakMb = Math.max(this.peakMb, memory(this.pid).rssMb);
      } catch {
        // The process exited; the run will report it.
      }
    };
    sample();
    this.timer = setInterval(sample, everyMs);
  }

  stop(): number {
    clearInterval(this.timer);
    return this.peakMb;
  }
}

export interface Service {
  name: string;
  pid: number;
  child: ChildProcess;
  /** The last 64 KB the process wrote (stdout + stderr), for error messages. */
  output(): string;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  core: string;
  env?: Record<string, string | undefined>;
  cwd?: string;
}

export function spawnService(name: string, argv: readonly string[], options: SpawnOptions): Service {
  const [bin, ...args] = pinned(options.core, argv);
  const child = spawn(bin, args, { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-65_536);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  if (child.pid === undefined) throw new Error(`cannot start ${name}: ${argv.join(" ")}`);
  return {
    name,
    pid: child.pid,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      // Generous: a profiler loaded with --import (alloc-sampler) writes its file on SIGTERM.
      const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Waits for the `{"listening": PORT}` line the bench's own servers print. */
export async function listeningPort(service: Service, timeoutMs = 15_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const match = /\{"listening":(\d+)\}/.exec(service.output());
    if (match) return Number(match[1]);
    if (service.child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${service.name} did not start:\n${service.output()}`);
}

/** Polls `url` until it answers 2xx, or throws with the process output. */
export async function waitHealthy(service: Service, url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.child.exitCode !== null) throw new Error(`${service.name} exited with ${service.child.exitCode}:\n${service.output()}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${service.name} did not answer ${url}:\n${service.output()}`);
}
