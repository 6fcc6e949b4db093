/**
 * `--import=dist/bench/tail-diag.js` (writes `$TAIL_DIR/tail-<entry point>-PID.json`, default
 * directory $TMPDIR; only in the gateway and the framework floor unless `TAIL_MATCH` says):
 * what makes a server's slow requests slow. Given to the gateway and the floor of a cpu-count run
 * by `NODE_OPTIONS=--import=$PWD/dist/bench/tail-diag.js node dist/bench/cpu-count.js ...`.
 *
 * The run is cut into segments at every pause of more than 1 s with no request in flight (with
 * cpu-count: the warm-up, then one segment per round). For each it records:
 *
 * - the server's time per request (`http.server.request.start` to `response.finish`), µs;
 * - the event loop's delay (`monitorEventLoopDelay`, 1 ms resolution);
 * - every GC pause by kind (count, total, max, a histogram);
 * - every callback of `setTimeout` / `setInterval` / `setImmediate` the server's own code
 *   scheduled, by its source (the periodic and end-of-turn work), with its synchronous time;
 * - turns of the loop, timed by a 1 ms timer: how late it fires (the loop's delay, wall clock)
 *   and what the process used of the CPU meanwhile: its main thread (`/proc/self/task/PID/
 *   schedstat`) and its other threads (V8's GC and compiler threads, libuv's pool; on a pinned
 *   process they take the main thread's core). The CPU the process itself used in a turn is
 *   the delay it would have on a core of its own: unlike the wall clock, other processes on the
 *   machine do not change it. A turn in which the process used `TAIL_STALL_MS` (default 10) or
 *   more is a stall, split into the main thread's GC pauses, its timer callbacks above, the
 *   other threads' CPU and the rest (the requests' own JavaScript, and what the callbacks'
 *   promises ran after them).
 *
 * Written as JSON on SIGTERM and at exit, with the process's peak RSS (VmHWM).
 */
import { subscribe } from "node:diagnostics_channel";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { GCProfiler } from "node:v8";
import { createHistogram, monitorEventLoopDelay, performance, PerformanceObserver, type RecordableHistogram } from "node:perf_hooks";

/** The servers it records: by default the gateway and the framework floor (so it can be given to every process with NODE_OPTIONS). */
const active = new RegExp(process.env.TAIL_MATCH ?? "(main|framework-floor)\\.js$").test(process.argv[1] ?? "");
const server = basename(process.argv[1] ?? "node", ".js");
const file = join(process.env.TAIL_DIR ?? tmpdir(), `tail-${server}-${process.pid}.json`);
const STALL_MS = Number(process.env.TAIL_STALL_MS ?? 10);
/** A pause between requests that starts a new segment (cpu-count: between the warm-up and a round, the other server runs meanwhile). */
const GAP_MS = 1000;
const schedstatPath = `/proc/self/task/${process.pid}/schedstat`;

const GC_KINDS: Record<number, string> = { 1: "scavenge", 2: "minor-ms", 4: "mark-compact", 8: "incremental", 16: "weak-callbacks" };
const BUCKETS_MS = [1, 2, 5, 10, 20, 50, 100, Infinity];

interface Tally {
  count: number;
  totalMs: number;
  maxMs: number;
  /** Counts per upper bound of BUCKETS_MS. */
  buckets: number[];
}

const tally = (): Tally => ({ count: 0, totalMs: 0, maxMs: 0, buckets: BUCKETS_MS.map(() => 0) });
function add(t: Tally, ms: number): void {
  t.count++;
  t.totalMs += ms;
  if (ms > t.maxMs) t.maxMs = ms;
  t.buckets[BUCKETS_MS.findIndex((bound) => ms <= bound)]++;
}

interface Stall {
  start: number;
  end: number;
  at: number;
  ms: number;
  gcMs: number;
  gcKinds: string[];
  timersMs: number;
  timers: string[];
  /** CPU of the process's other threads during the stall (the main thread's: mainCpuMs). */
  otherThreadsMs: number;
  /** The main thread's wait for the core (run queue): its other threads' and other processes'. */
  waitMs: number;
  /** The main thread on the core. */
  mainCpuMs: number;
}

interface Segment {
  start: number;
  end: number;
  requests: number;
  latency: RecordableHistogram;
  delay: ReturnType<typeof monitorEventLoopDelay>;
  gc: Map<string, Tally>;
  timers: Map<string, Tally>;
  stalls: Stall[];
  /** Per turn: the process's CPU (all threads) and the main thread's, µs. */
  turnCpu: RecordableHistogram;
  turnMainCpu: RecordableHistogram;
  cpuStart: number;
  schedStart: [number, number];
  cpuEnd?: number;
  schedEnd?: [number, number];
  profiler: GCProfiler;
  heap?: HeapFigures;
}

interface HeapFigures {
  scavenges: number;
  /** What scavenges moved to the old generation (old and large-object spaces grew by), MB. */
  promotedMb: number;
  /** Left in the young generation after a scavenge, average MB. */
  survivedMb: number;
  markCompacts: number;
  /** Old-space use after each mark-compact (what was live), MB: min and max. */
  liveAfterMarkCompactMb: [number, number];
  /** The largest the heap got (total size), MB. */
  maxHeapMb: number;
}

interface GcStat {
  gcType: string;
  beforeGC: { heapStatistics: { totalHeapSize: number }; heapSpaceStatistics: { spaceName: string; spaceUsedSize: number }[] };
  afterGC: { heapStatistics: { totalHeapSize: number }; heapSpaceStatistics: { spaceName: string; spaceUsedSize: number }[] };
}

function heapFigures(stats: GcStat[]): HeapFigures {
  const used = (side: GcStat["beforeGC"], ...names: string[]) =>
    side.heapSpaceStatistics.filter((x) => names.includes(x.spaceName)).reduce((sum, x) => sum + x.spaceUsedSize, 0) / 2 ** 20;
  const scavenges = stats.filter((x) => x.gcType === "Scavenge");
  const majors = stats.filter((x) => x.gcType === "MarkSweepCompact");
  const live = majors.map((x) => used(x.afterGC, "old_space"));
  return {
    scavenges: scavenges.length,
    promotedMb: round(
      scavenges.reduce((sum, x) => sum + used(x.afterGC, "old_space", "large_object_space") - used(x.beforeGC, "old_space", "large_object_space"), 0),
    ),
    survivedMb: round(scavenges.reduce((sum, x) => sum + used(x.afterGC, "new_space"), 0) / Math.max(1, scavenges.length)),
    markCompacts: majors.length,
    liveAfterMarkCompactMb: [round(Math.min(...live, Infinity)), round(Math.max(...live, 0))],
    maxHeapMb: round(Math.max(0, ...stats.map((x) => x.beforeGC.heapStatistics.totalHeapSize / 2 ** 20))),
  };
}

const segments: Segment[] = [];
let current: Segment | undefined;
/** Requests being answered, and when the last answer ended. */
let inFlight = 0;
let lastAnswer = 0;

function schedstat(): [number, number] {
  // "<ns on the cpu> <ns waiting on a run queue> <timeslices>"
  const [run, wait] = readFileSync(schedstatPath, "utf8").split(" ").map(Number);
  return [run / 1e6, wait / 1e6];
}
const cpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

function closeSegment(): void {
  if (!current || current.heap) return;
  current.heap = heapFigures((current.profiler.stop() as unknown as { statistics: GcStat[] }).statistics);
  current.delay.disable();
  current.cpuEnd = cpuMs();
  current.schedEnd = schedstat();
}

function segmentFor(now: number): Segment {
  if (!current || (inFlight === 0 && now - lastAnswer > GAP_MS)) {
    closeSegment();
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const profiler = new GCProfiler();
    profiler.start();
    current = {
      start: now,
      end: now,
      requests: 0,
      latency: createHistogram(),
      delay,
      gc: new Map(),
      timers: new Map(),
      stalls: [],
      turnCpu: createHistogram(),
      turnMainCpu: createHistogram(),
      cpuStart: cpuMs(),
      schedStart: schedstat(),
      profiler,
    };
    segments.push(current);
  }
  return current;
}

// --- requests ------------------------------------------------------------------

const arrivedAt = Symbol("tail-diag arrived");
if (active) {
  subscribe("http.server.request.start", (message) => {
    const now = performance.now();
    segmentFor(now);
    inFlight++;
    (message as { response: Record<symbol, number> }).response[arrivedAt] = now;
  });
  subscribe("http.server.response.finish", (message) => {
    const response = (message as { response: Record<symbol, number> }).response;
    const arrived = response[arrivedAt];
    if (arrived === undefined || !current) return;
    const now = performance.now();
    inFlight--;
    lastAnswer = now;
    current.requests++;
    current.end = now;
    current.latency.record(Math.max(1, Math.round((now - arrived) * 1000)));
  });
}

// --- GC -----------------------------------------------------------------------------

interface GcPause {
  start: number;
  end: number;
  kind: string;
}
/** Every pause, for the stalls (entries arrive a little after the pause: stalls are split at the end). */
const gcPauses: GcPause[] = [];
if (active) {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = GC_KINDS[(entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0] ?? "other";
      gcPauses.push({ start: entry.startTime, end: entry.startTime + entry.duration, kind });
      const segment = segments.findLast((s) => s.start <= entry.startTime);
      if (!segment || entry.startTime > segment.end + GAP_MS) continue;
      let t = segment.gc.get(kind);
      if (!t) segment.gc.set(kind, t = tally());
      add(t, entry.duration);
    }
  }).observe({ entryTypes: ["gc"] });
}

// --- timer callbacks ----------------------------------------------------------------

interface TimerRun {
  start: number;
  end: number;
  source: string;
}
/** Callbacks of 0.5 ms or more (the first 100,000). */
const timerRuns: TimerRun[] = [];
/** Source text of a callback -> where it was first scheduled from. */
const sources = new Map<string, string>();

/** Where a callback was scheduled from: the first frame outside this file and node's internals. */
function sourceOf(callback: (...args: unknown[]) => unknown): string {
  const text = String(callback);
  let source = sources.get(text);
  if (source === undefined) {
    const frames = (new Error().stack ?? "").split("\n").slice(2);
    const frame = frames.find((f) => !f.includes("tail-diag") && !f.includes("node:")) ?? frames[0] ?? "?";
    source = `${frame.trim().replace(/^at /, "").replace(/file:\/\/\S*?\/(dist|node_modules)\//, "$1/")} :: ${text.slice(0, 60).replace(/\s+/g, " ")}`;
    sources.set(text, source);
  }
  return source;
}

function timed<A extends unknown[]>(callback: (...args: A) => unknown, source: string): (...args: A) => unknown {
  return function (this: unknown, ...args: A) {
    const start = performance.now();
    try {
      return callback.apply(this, args);
    } finally {
      const end = performance.now();
      if (current && start <= current.end + GAP_MS) {
        let t = current.timers.get(source);
        if (!t) current.timers.set(source, t = tally());
        add(t, end - start);
      }
      if (end - start >= 0.5 && timerRuns.length < 100_000) timerRuns.push({ start, end, source });
    }
  };
}

let own = false;
if (active) {
  for (const name of ["setTimeout", "setInterval", "setImmediate"] as const) {
    const original = globalThis[name] as unknown as (callback: (...args: unknown[]) => unknown, ...rest: unknown[]) => unknown;
    (globalThis as Record<string, unknown>)[name] = function (callback: (...args: unknown[]) => unknown, ...rest: unknown[]) {
      if (own || typeof callback !== "function") return original(callback, ...rest);
      return original(timed(callback, `${name} ${sourceOf(callback)}`), ...rest);
    };
  }
}

// --- stalls -----------------------------------------------------------------------------

let tickAt = performance.now();
let tickCpu = cpuMs();
let tickSched = schedstat();
function tick(): void {
  const now = performance.now();
  const cpu = cpuMs();
  const sched = schedstat();
  if (current && tickAt <= current.end + GAP_MS) {
    const mainCpuMs = sched[0] - tickSched[0];
    const ownCpuMs = Math.max(mainCpuMs, cpu - tickCpu);
    current.turnCpu.record(Math.max(1, Math.round(ownCpuMs * 1000)));
    current.turnMainCpu.record(Math.max(1, Math.round(mainCpuMs * 1000)));
    if (ownCpuMs >= STALL_MS) {
      current.stalls.push({
        start: tickAt,
        end: now,
        at: Math.round(tickAt - current.start),
        ms: now - tickAt,
        gcMs: 0,
        gcKinds: [],
        timersMs: 0,
        timers: [],
        otherThreadsMs: ownCpuMs - mainCpuMs,
        waitMs: sched[1] - tickSched[1],
        mainCpuMs,
      });
    }
  }
  tickAt = now;
  tickCpu = cpu;
  tickSched = sched;
  schedule();
}
function schedule(): void {
  own = true;
  setTimeout(tick, 1).unref();
  own = false;
}
if (active) schedule();

// --- the report ----------------------------------------------------------------------------

const round = (n: number, digits = 2) => Number(n.toFixed(digits));
const tallies = (map: Map<string, Tally>) =>
  Object.fromEntries(
    [...map]
      .sort((a, b) => b[1].totalMs - a[1].totalMs)
      .map(([key, t]) => [
        key,
        {
          count: t.count,
          totalMs: round(t.totalMs),
          avgMs: round(t.totalMs / t.count, 3),
          maxMs: round(t.maxMs),
          byMs: Object.fromEntries(BUCKETS_MS.map((bound, i) => [`<=${bound}`, t.buckets[i]]).filter(([, n]) => n)),
        },
      ]),
  );

/** What the main thread did during each stall, from the GC pauses and timer callbacks known by now. */
function attribute(stall: Stall): void {
  const overlap = (start: number, end: number) => Math.max(0, Math.min(end, stall.end) - Math.max(start, stall.start));
  const gcs = gcPauses.filter((g) => overlap(g.start, g.end) > 0);
  const timers = timerRuns.filter((t) => overlap(t.start, t.end) > 0);
  stall.gcMs = gcs.reduce((sum, g) => sum + overlap(g.start, g.end), 0);
  stall.gcKinds = gcs.map((g) => `${g.kind} ${(g.end - g.start).toFixed(1)}`);
  stall.timersMs = timers.reduce((sum, t) => sum + overlap(t.start, t.end), 0);
  stall.timers = timers.map((t) => `${(t.end - t.start).toFixed(1)} ${t.source}`);
}

/** CPU ms of each thread of the process since it started, by thread name. */
function threads(): Record<string, number> {
  const byName: Record<string, number> = {};
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
      const key = tid === String(process.pid) ? "main" : name;
      byName[key] = (byName[key] ?? 0) + ms;
    } catch {
      // The thread ended.
    }
  }
  return byName;
}

function report(): object {
  closeSegment();
  for (const segment of segments) segment.stalls.forEach(attribute);
  const status = readFileSync("/proc/self/status", "utf8");
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return {
    server,
    pid: process.pid,
    execArgv: process.execArgv,
    stallMs: STALL_MS,
    peakRssMb: round(kb("VmHWM") / 1024, 1),
    rssMb: round(kb("VmRSS") / 1024, 1),
    threadCpuMs: threads(),
    segments: segments.map((s) => {
      const pct = (h: { percentile(p: number): number }, p: number, scale: number) => round(h.percentile(p) / scale);
      const stallTotal = (key: "ms" | "gcMs" | "timersMs" | "otherThreadsMs" | "waitMs" | "mainCpuMs") =>
        round(s.stalls.reduce((sum, st) => sum + st[key], 0), 1);
      const seconds = (s.end - s.start) / 1000;
      const mainCpu = (s.schedEnd?.[0] ?? 0) - s.schedStart[0];
      return {
        requests: s.requests,
        seconds: round(seconds),
        cpuUsPerRequest: round((((s.cpuEnd ?? 0) - s.cpuStart) * 1000) / Math.max(1, s.requests), 1),
        mainThreadCpuUsPerRequest: round((mainCpu * 1000) / Math.max(1, s.requests), 1),
        mainThreadWaitMs: round((s.schedEnd?.[1] ?? 0) - s.schedStart[1], 1),
        serverLatencyMs: {
          p50: pct(s.latency, 50, 1000),
          p90: pct(s.latency, 90, 1000),
          p99: pct(s.latency, 99, 1000),
          p999: pct(s.latency, 99.9, 1000),
          max: round(s.latency.max / 1000),
        },
        turnCpuMs: {
          p50: pct(s.turnCpu, 50, 1000),
          p90: pct(s.turnCpu, 90, 1000),
          p99: pct(s.turnCpu, 99, 1000),
          p999: pct(s.turnCpu, 99.9, 1000),
          max: round(s.turnCpu.max / 1000),
        },
        turnMainCpuMs: {
          p50: pct(s.turnMainCpu, 50, 1000),
          p90: pct(s.turnMainCpu, 90, 1000),
          p99: pct(s.turnMainCpu, 99, 1000),
          p999: pct(s.turnMainCpu, 99.9, 1000),
          max: round(s.turnMainCpu.max / 1000),
        },
        loopDelayMs: {
          p50: pct(s.delay, 50, 1e6),
          p90: pct(s.delay, 90, 1e6),
          p99: pct(s.delay, 99, 1e6),
          p999: pct(s.delay, 99.9, 1e6),
          max: round(s.delay.max / 1e6),
        },
        heap: s.heap,
        gc: tallies(s.gc),
        timers: tallies(s.timers),
        stalls: {
          count: s.stalls.length,
          totalMs: stallTotal("ms"),
          gcMs: stallTotal("gcMs"),
          timersMs: stallTotal("timersMs"),
          otherThreadsMs: stallTotal("otherThreadsMs"),
          waitMs: stallTotal("waitMs"),
          mainCpuMs: stallTotal("mainCpuMs"),
          longest: [...s.stalls]
            .sort((a, b) => b.ms - a.ms)
            .slice(0, 15)
            .map(({ start: _start, end: _end, ...st }) => ({
              ...st,
              ms: round(st.ms, 1),
              gcMs: round(st.gcMs, 1),
              timersMs: round(st.timersMs, 1),
              otherThreadsMs: round(st.otherThreadsMs, 1),
              waitMs: round(st.waitMs, 1),
              mainCpuMs: round(st.mainCpuMs, 1),
            })),
        },
      };
    }),
  };
}

let written = false;
function write(): void {
  if (written) return;
  written = true;
  writeFileSync(file, JSON.stringify(report(), null, 1));
}
if (active) {
  process.prependListener("SIGTERM", write);
  process.on("exit", write);
}
