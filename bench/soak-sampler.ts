/**
 * What the soak watches in the gateway process while the load runs: resident memory
 * (VmRSS) and the V8 heap after a full GC, open file descriptors by kind, and the CPU share
 * it used since the last sample, every few seconds; and the least-squares trend of a series.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { cpuSeconds, memory } from "./procs.ts";
import type { InspectorSession } from "./soak-inspector.ts";

/**
 * Descriptors by what they are: connections from clients to the gateway's port, to the
 * backend, to Redis, and the rest (files, pipes, the listening socket, epoll...). Client and
 * pool connections follow the load; a leak shows as growth of `other` or as client
 * connections still open after the clients closed theirs.
 */
export interface FdCounts {
  total: number;
  clients: number;
  upstream: number;
  redis: number;
  other: number;
}

export interface Ports {
  gateway: number;
  backend: number;
  redis?: number;
}

/** inode -> [local port, remote port, state] of every TCP socket in the process's network namespace. */
function tcpSockets(pid: number): Map<string, [number, number, string]> {
  const sockets = new Map<string, [number, number, string]>();
  for (const table of ["tcp", "tcp6"]) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const port = (address: string) => parseInt(address.slice(address.lastIndexOf(":") + 1), 16);
      sockets.set(fields[9], [port(fields[1]), port(fields[2]), fields[3]]);
    }
  }
  return sockets;
}

const LISTEN = "0A";

export function openFds(pid: number, ports: Ports): FdCounts {
  const counts: FdCounts = { total: 0, clients: 0, upstream: 0, redis: 0, other: 0 };
  const sockets = tcpSockets(pid);
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      // Closed between the listing and the read.
      continue;
    }
    counts.total++;
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    const tcp = inode ? sockets.get(inode) : undefined;
    if (tcp && tcp[2] !== LISTEN && tcp[0] === ports.gateway) counts.clients++;
    else if (tcp && tcp[1] === ports.backend) counts.upstream++;
    else if (tcp && ports.redis !== undefined && tcp[1] === ports.redis) counts.redis++;
    else counts.other++;
  }
  return counts;
}

export interface ProcessSample {
  /** Seconds since the load started. */
  t: number;
  rssMb: number;
  /** V8 heap in use right after a full GC (absent without an inspector session). */
  heapMb?: number;
  fds: FdCounts;
  /** Share of one core (0-1) the process used since the previous sample. */
  cpu: number;
}

export class ProcessWatcher {
  readonly samples: ProcessSample[] = [];
  private timer?: ReturnType<typeof setInterval>;
  private started = 0;
  private lastCpu = 0;
  private lastAt = 0;
  private busy = false;

  constructor(
    private readonly pid: number,
    private readonly ports: Ports,
    private readonly inspector?: InspectorSession,
    private readonly onSample: (sample: ProcessSample) => void = () => {},
  ) {}

  /** Takes the first sample (before the load) and then one every `everySeconds`. */
  async start(everySeconds: number): Promise<void> {
    this.started = performance.now();
    this.lastAt = this.started;
    this.lastCpu = cpuSeconds(this.pid);
    await this.sample();
    this.started = performance.now();
    this.timer = setInterval(() => void this.sample(), everySeconds * 1000);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One sample now, outside the series (e.g. after the load). */
  async snapshot(): Promise<ProcessSample | undefined> {
    return this.read();
  }

  private async sample(): Promise<void> {
    // A GC that outlasts the interval must not stack samples.
    if (this.busy) return;
    this.busy = true;
    try {
      const sample = await this.read();
      if (!sample) return;
      this.samples.push(sample);
      this.onSample(sample);
    } finally {
      this.busy = false;
    }
  }

  private async read(): Promise<ProcessSample | undefined> {
    try {
      const t = (performance.now() - this.started) / 1000;
      const heapMb = await this.inspector?.collectGarbage();
      const now = performance.now();
      const cpu = cpuSeconds(this.pid);
      const wall = (now - this.lastAt) / 1000;
      const sample: ProcessSample = { t: Math.max(0, t), rssMb: memory(this.pid).rssMb, heapMb, fds: openFds(this.pid, this.ports), cpu: 0 };
      // The first sample (and one taken right after another) has no interval to measure over.
      if (wall >= 1) sample.cpu = (cpu - this.lastCpu) / wall;
      this.lastCpu = cpu;
      this.lastAt = now;
      return sample;
    } catch {
      // The process exited: the run reports the crash; no sample to add.
      return undefined;
    }
  }
}

/** Least-squares slope of y over x (units of y per unit of x); NaN with fewer than two points. */
export function slope(points: ReadonlyArray<{ x: number; y: number }>): number {
  const n = points.length;
  if (n < 2) return Number.NaN;
  const meanX = points.reduce((s, p) => s + p.x, 0) / n;
  const meanY = points.reduce((s, p) => s + p.y, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (const p of points) {
    covariance += (p.x - meanX) * (p.y - meanY);
    variance += (p.x - meanX) ** 2;
  }
  return variance === 0 ? Number.NaN : covariance / variance;
}
