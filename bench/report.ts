/** The results: the JSON written to bench/results/, the tables printed, and the targets judged. */
import type { JobsResult } from "./jobs.ts";
import type { RowResult } from "./matrix.ts";
import type { Figures } from "./measure.ts";
import type { UploadResult } from "./upload.ts";

export interface Machine {
  nproc: number;
  cpu: string;
  node: string;
  deno?: string;
  os: string;
  pinned: boolean;
}

export interface Results {
  date: string;
  mode: "quick" | "full";
  runtime: "node" | "deno";
  loadGenerator: string;
  machine: Machine;
  rows: RowResult[];
  jobs?: JobsResult & { directUploadsPerSecond?: number };
  uploads: Array<{ name: string; target: string } & UploadResult>;
  /** Plugins active in the gateway per variant (from its start-up log line). */
  plugins: Record<string, string[]>;
  targets: TargetCheck[];
  /** Wrong answers anywhere (errors + invalid bodies); non-zero fails the run. */
  wrong: number;
}

export interface TargetCheck {
  target: string;
  limit: string;
  value: string;
  met: boolean | "n/a";
}

const fmt = (value: number | undefined, digits = 0) => (value === undefined || Number.isNaN(value) ? "-" : value.toFixed(digits));
const ratio = (value: number | undefined, base: number | undefined) =>
  value === undefined || base === undefined || !base ? "" : ` (${(value / base).toFixed(2)}x)`;
const added = (value: number | undefined, base: number | undefined) =>
  value === undefined || base === undefined ? "" : ` (${value - base >= 0 ? "+" : ""}${(value - base).toFixed(2)})`;

/** How much of the server core other processes took during the row's rounds (worst of the gateway and the floors). */
function foreign(row: RowResult): string {
  const worst = Math.max(row.figures.gateway?.foreignLoad ?? 0, row.figures.bare?.foreignLoad ?? 0, row.figures.floor?.foreignLoad ?? 0);
  return `${(worst * 100).toFixed(0)}%`;
}

export function table(header: string[], rows: string[][]): string {
  const lines = [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`];
  for (const row of rows) lines.push(`| ${row.join(" | ")} |`);
  return lines.join("\n");
}

function find(rows: RowResult[], variant: string, scenario: string, load: string): RowResult | undefined {
  return rows.find((r) => r.variant === variant && r.scenario === scenario && r.load === load);
}

/** The bare proxy's figures for a row: its own, else the basic variant's of the same scenario and load. */
function bareFor(rows: RowResult[], row: RowResult): Figures | undefined {
  return row.figures.bare ?? find(rows, "basic", row.scenario, row.load)?.figures.bare;
}

export function throughputTable(results: Results): string {
  const rows = results.rows.filter((r) => r.load === "c32");
  return table(
    ["scenario", "config", "req/s direct", "req/s gateway", "req/s bare proxy", "p50 ms d / gw / bare", "p99 ms d / gw / bare", "CPU µs/req gw", "CPU µs/req bare", "gw / bare CPU", "gw peak RSS MB", "core 0 busy with others", "wrong"],
    rows.map((row) => {
      const { direct: d, gateway: g } = row.figures;
      const b = bareFor(results.rows, row);
      const own = row.figures.bare !== undefined;
      const wrong = Object.values(row.figures).reduce((sum, f) => sum + f.errors + f.invalid, 0);
      return [
        row.title,
        row.variant,
        fmt(d?.rps),
        `${fmt(g?.rps)}${ratio(g?.rps, d?.rps)}`,
        own ? `${fmt(b?.rps)}${ratio(b?.rps, d?.rps)}` : "-",
        `${fmt(d?.p50Ms, 2)} / ${fmt(g?.p50Ms, 2)} / ${own ? fmt(b?.p50Ms, 2) : "-"}`,
        `${fmt(d?.p99Ms, 2)} / ${fmt(g?.p99Ms, 2)} / ${own ? fmt(b?.p99Ms, 2) : "-"}`,
        fmt(g?.cpuUsPerRequest),
        `${fmt(b?.cpuUsPerRequest)}${own ? "" : "*"}`,
        b && g ? `${(g.cpuUsPerRequest / b.cpuUsPerRequest).toFixed(2)}x` : "-",
        fmt(g?.peakRssMb),
        foreign(row),
        String(wrong),
      ];
    }),
  );
}

export function latencyTable(results: Results): string {
  const rows = results.rows.filter((r) => r.load === "r100");
  return table(
    ["scenario", "config", "p50 ms direct", "p50 gateway (added)", "p50 bare (added)", "p99 ms direct", "p99 gateway (added)", "p99 bare (added)", "first event p50 d / gw (added)", "first event p99 d / gw (added)", "CPU µs/req gw / bare", "core 0 busy with others"],
    rows.map((row) => {
      const { direct: d, gateway: g, bare: b } = row.figures;
      const stream = row.scenario === "stream";
      return [
        row.title,
        row.variant,
        fmt(d?.p50Ms, 2),
        `${fmt(g?.p50Ms, 2)}${added(g?.p50Ms, d?.p50Ms)}`,
        b ? `${fmt(b.p50Ms, 2)}${added(b.p50Ms, d?.p50Ms)}` : "-",
        fmt(d?.p99Ms, 2),
        `${fmt(g?.p99Ms, 2)}${added(g?.p99Ms, d?.p99Ms)}`,
        b ? `${fmt(b.p99Ms, 2)}${added(b.p99Ms, d?.p99Ms)}` : "-",
        stream ? `${fmt(d?.ttfbP50Ms, 2)} / ${fmt(g?.ttfbP50Ms, 2)}${added(g?.ttfbP50Ms, d?.ttfbP50Ms)}` : "-",
        stream ? `${fmt(d?.ttfbP99Ms, 2)} / ${fmt(g?.ttfbP99Ms, 2)}${added(g?.ttfbP99Ms, d?.ttfbP99Ms)}` : "-",
        `${fmt(g?.cpuUsPerRequest)} / ${b ? fmt(b.cpuUsPerRequest) : "-"}`,
        foreign(row),
      ];
    }),
  );
}

/**
 * CPU per request of the two floors and the gateway, side by side: the bare node:http proxy,
 * the framework floor (Hono on @hono/node-server with the gateway's HTTP client, nothing else)
 * and the gateway. The first ratio is the price of the WHATWG Request/Response layer, the
 * second that of the gateway's own work on top of it.
 */
export function floorTable(results: Results): string {
  const rows = results.rows.filter((r) => r.load === "c32" && r.figures.floor && r.figures.bare && r.figures.gateway);
  return table(
    ["scenario", "config", "CPU µs/req bare", "CPU µs/req framework floor (x bare)", "CPU µs/req gateway (x floor)", "gateway x bare", "req/s floor", "floor peak RSS MB"],
    rows.map((row) => {
      const { bare: b, floor: f, gateway: g } = row.figures as Required<RowResult["figures"]>;
      return [
        row.title,
        row.variant,
        fmt(b.cpuUsPerRequest),
        `${fmt(f.cpuUsPerRequest)}${ratio(f.cpuUsPerRequest, b.cpuUsPerRequest)}`,
        `${fmt(g.cpuUsPerRequest)}${ratio(g.cpuUsPerRequest, f.cpuUsPerRequest)}`,
        `${(g.cpuUsPerRequest / b.cpuUsPerRequest).toFixed(2)}x`,
        fmt(f.rps),
        fmt(f.peakRssMb),
      ];
    }),
  );
}

export function asyncTable(results: Results): string {
  const lines: string[][] = [];
  const jobs = results.jobs;
  if (jobs) {
    lines.push([
      "async end to end (submit, relay, poll), 100 KB",
      `${fmt(jobs.jobsPerSecond)} jobs/s (direct uploads of the same file: ${fmt(jobs.directUploadsPerSecond)}/s${ratio(jobs.jobsPerSecond, jobs.directUploadsPerSecond)})`,
      `${fmt(jobs.cpuUsPerJob)} µs CPU/job`,
      `${fmt(jobs.peakRssMb)} MB peak RSS`,
      String(jobs.errors + jobs.invalid),
    ]);
  }
  for (const upload of results.uploads) {
    lines.push([`${upload.name}, 100 MiB`, `${upload.target}: ${fmt(upload.seconds, 2)} s`, "-", `+${fmt(upload.growthMb)} MB peak RSS`, upload.ok ? "0" : "1"]);
  }
  return table(["scenario", "result", "CPU", "memory", "wrong"], lines);
}

export function targetsTable(results: Results): string {
  return table(
    ["target", "limit", "measured", "met"],
    results.targets.map((t) => [t.target, t.limit, t.value, t.met === "n/a" ? "n/a" : t.met ? "yes" : "**no**"]),
  );
}

/** Judges the targets on this run's figures. */
export function checkTargets(results: Results, other?: Results): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const rows = results.rows;
  for (const variant of ["prod-memory", "prod-redis"]) {
    const row = find(rows, variant, "llm-miss", "c32");
    const g = row?.figures.gateway;
    const b = row ? bareFor(rows, row) : undefined;
    if (g && b) {
      const r = g.cpuUsPerRequest / b.cpuUsPerRequest;
      checks.push({ target: `CPU/request, LLM miss, limits+usage+metrics (${variant}) vs bare proxy`, limit: "<= 1.5x", value: `${fmt(g.cpuUsPerRequest)} / ${fmt(b.cpuUsPerRequest)} µs = ${r.toFixed(2)}x`, met: r <= 1.5 });
    }
  }
  const open = rows.filter((r) => r.load === "r100" && r.figures.gateway && r.figures.direct);
  if (open.length > 0) {
    const worst = (pick: (f: Figures) => number) =>
      open.map((r) => ({ row: r, value: pick(r.figures.gateway as Figures) - pick(r.figures.direct as Figures) })).sort((a, b) => b.value - a.value)[0];
    const p50 = worst((f) => f.p50Ms);
    const p99 = worst((f) => f.p99Ms);
    checks.push({ target: "added latency at 100 req/s, p50 (worst scenario)", limit: "<= +1 ms", value: `+${p50.value.toFixed(2)} ms (${p50.row.scenario}, ${p50.row.variant})`, met: p50.value <= 1 });
    checks.push({ target: "added latency at 100 req/s, p99 (worst scenario)", limit: "<= +3 ms", value: `+${p99.value.toFixed(2)} ms (${p99.row.scenario}, ${p99.row.variant})`, met: p99.value <= 3 });
    const streams = open.filter((r) => r.scenario === "stream");
    if (streams.length > 0) {
      const ttfb = streams
        .map((r) => ({ row: r, value: (r.figures.gateway?.ttfbP50Ms ?? 0) - (r.figures.direct?.ttfbP50Ms ?? 0) }))
        .sort((a, b) => b.value - a.value)[0];
      checks.push({ target: "streaming time to first event, p50 (worst config)", limit: "<= +1 ms", value: `+${ttfb.value.toFixed(2)} ms (${ttfb.row.variant})`, met: ttfb.value <= 1 });
    }
  }
  for (const variant of ["basic", "prod-memory", "prod-redis"]) {
    const hit = find(rows, variant, "llm-hit", "c32")?.figures.gateway;
    const miss = find(rows, variant, "llm-miss", "c32")?.figures.gateway;
    if (hit && miss) {
      const r = hit.rps / miss.rps;
      checks.push({ target: `cache hit vs miss req/s (${variant})`, limit: ">= 2x", value: `${fmt(hit.rps)} / ${fmt(miss.rps)} = ${r.toFixed(2)}x`, met: r >= 2 });
    }
  }
  const closed = rows.filter((r) => r.load === "c32" && r.figures.gateway);
  if (closed.length > 0) {
    const top = closed.sort((a, b) => (b.figures.gateway?.peakRssMb ?? 0) - (a.figures.gateway?.peakRssMb ?? 0))[0];
    const peak = top.figures.gateway?.peakRssMb ?? 0;
    checks.push({ target: "gateway peak RSS under 32-connection load (worst)", limit: "<= 120 MB", value: `${fmt(peak)} MB (${top.scenario}, ${top.variant})`, met: peak <= 120 });
  }
  for (const upload of results.uploads.filter((u) => u.target === "gateway")) {
    checks.push({ target: `100 MiB upload, RSS growth (${upload.name})`, limit: "<= 64 MB", value: `+${fmt(upload.growthMb)} MB`, met: upload.growthMb <= 64 });
  }
  // Only runs of the same length compare (a quick run's figures are noisier and warmer).
  if (other && other.runtime !== results.runtime && other.mode === results.mode) {
    const [deno, node] = results.runtime === "deno" ? [results, other] : [other, results];
    const pairs = deno.rows
      .filter((r) => r.load === "c32")
      .map((r) => ({ row: r, node: find(node.rows, r.variant, r.scenario, "c32")?.figures.gateway, deno: r.figures.gateway }))
      .filter((p): p is { row: RowResult; node: Figures; deno: Figures } => p.node !== undefined && p.deno !== undefined);
    if (pairs.length > 0) {
      const worst = pairs.map((p) => ({ ...p, r: p.deno.cpuUsPerRequest / p.node.cpuUsPerRequest })).sort((a, b) => b.r - a.r)[0];
      checks.push({
        target: `Deno vs Node, gateway CPU/request (worst scenario; Node run of ${node.date})`,
        limit: "<= 1.3x",
        value: `${worst.r.toFixed(2)}x (${worst.row.scenario}, ${worst.row.variant}: ${fmt(worst.deno.cpuUsPerRequest)} vs ${fmt(worst.node.cpuUsPerRequest)} µs)`,
        met: worst.r <= 1.3,
      });
    }
  } else {
    checks.push({ target: "Deno within 1.3x of Node", limit: "<= 1.3x", value: "needs a run of each runtime: npm run bench -- --runtime deno compares with the last Node run", met: "n/a" });
  }
  return checks;
}

export function printAll(results: Results): string {
  return [
    `## Throughput at ${32} connections (${results.loadGenerator}), ${results.runtime}, ${results.mode} run`,
    "",
    throughputTable(results),
    "",
    "`*` bare proxy figure from the basic config of the same scenario (the bare proxy has no features to turn on).",
    "\"core 0 busy with others\": the share of the gateway's core that other processes used during the rounds; above a few percent, latencies and rates are disturbed (CPU per request much less).",
    "",
    "## Latency at a fixed 100 requests/s",
    "",
    latencyTable(results),
    "",
    "## The two floors: the bare node:http proxy, and Hono on @hono/node-server with the gateway's client",
    "",
    floorTable(results),
    "",
    "## Async jobs and large uploads",
    "",
    asyncTable(results),
    "",
    "## Targets",
    "",
    targetsTable(results),
  ].join("\n");
}
