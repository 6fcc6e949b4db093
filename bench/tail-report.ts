/**
 * `node dist/bench/tail-report.js DIR...`: the figures of bench/tail-diag.ts, one line per server
 * of each run directory (`TAIL_DIR`), from each server's last segment (with cpu-count: its last
 * round), then that segment's longest stalls.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}
interface Tally {
  count: number;
  avgMs: number;
  maxMs: number;
}
interface StallFigures {
  ms: number;
  mainCpuMs: number;
  otherThreadsMs: number;
  gcMs: number;
  gcKinds: string[];
  timersMs: number;
  waitMs: number;
}
interface Segment {
  requests: number;
  cpuUsPerRequest: number;
  mainThreadCpuUsPerRequest: number;
  serverLatencyMs: Percentiles;
  turnCpuMs: Percentiles;
  loopDelayMs: Percentiles;
  heap: { scavenges: number; promotedMb: number; markCompacts: number };
  gc: Record<string, Tally>;
  stalls: { count: number; longest: StallFigures[] };
}
interface Report {
  server: string;
  peakRssMb: number;
  segments: Segment[];
}

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  process.stderr.write("usage: node dist/bench/tail-report.js DIR...\n");
  process.exit(2);
}
const p = (x: Percentiles) => `${x.p50}/${x.p99}/${x.p999}/${x.max}`;
const gc = (t: Tally | undefined) => (t ? `${t.count} x ${t.avgMs.toFixed(1)} ms (max ${t.maxMs.toFixed(1)})` : "-");
for (const dir of dirs) {
  for (const name of readdirSync(dir).filter((f) => /^tail-.*\.json$/.test(f))) {
    const report = JSON.parse(readFileSync(join(dir, name), "utf8")) as Report;
    const s = report.segments.filter((x) => x.requests > 0).at(-1);
    if (!s) continue;
    const per1k = (n: number) => ((n * 1000) / s.requests).toFixed(1);
    process.stdout.write(
      `${dir} ${report.server}: ${s.requests} requests, peak RSS ${report.peakRssMb} MB, CPU ${s.cpuUsPerRequest} µs/req (other threads ${
        (s.cpuUsPerRequest - s.mainThreadCpuUsPerRequest).toFixed(0)
      })\n` +
        `  server latency ms p50/p99/p99.9/max ${p(s.serverLatencyMs)}; loop delay ${p(s.loopDelayMs)}; process CPU per turn ${p(s.turnCpuMs)}\n` +
        `  scavenges ${gc(s.gc.scavenge)}, mark-compacts ${gc(s.gc["mark-compact"])}, per 1000 requests: ${per1k(s.heap.scavenges)} scavenges, ${
          per1k(s.heap.markCompacts)
        } mark-compacts; promoted ${((s.heap.promotedMb * 1024) / s.requests).toFixed(1)} KB/req\n`,
    );
    for (const stall of s.stalls.longest.slice(0, 5)) {
      process.stdout.write(
        `    stall ${stall.ms.toFixed(1)} ms: main thread ${stall.mainCpuMs} ms (GC ${stall.gcMs} [${
          stall.gcKinds.join(", ")
        }], timers ${stall.timersMs}), other threads ${stall.otherThreadsMs} ms, waiting for the core ${stall.waitMs} ms\n`,
      );
    }
  }
}
