/** The results: the JSON written to bench/results/, the tables printed, and the targets judged. */
import type { BatchBenchResult } from "./batches.ts";
import type { JobsResult } from "./jobs.ts";
import type { LoadId, RowResult } from "./matrix.ts";
import type { Figures } from "./measure.ts";
import type { UploadResult } from "./upload.ts";
import { type GuardCheck, guardsTable } from "./guards.ts";
import { growthTable, scalingTargets, usageWriteTable, workersTable } from "./report-scaling.ts";

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
  batches?: BatchBenchResult;
  uploads: Array<{ name: string; target: string } & UploadResult>;
  /** Plugins active in the gateway per variant (from its start-up log line). */
  plugins: Record<string, string[]>;
  targets: TargetCheck[];
  /** Each 32-connection row against its guard (bench/guards.ts); absent in files written before them. */
  guards?: GuardCheck[];
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

/** The streaming scenarios: their time to first event is judged, their Deno figures only reported. */
const isStream = (row: RowResult) => row.scenario === "stream" || row.scenario === "stream-miss";

/** A floor's figures for a row; `own` false when they are the basic config's (marked `*`). */
interface FloorFigures {
  figures: Figures;
  own: boolean;
}

/**
 * A floor's figures for a row: its own, else the basic variant's of the same scenario and load
 * (a floor has no features to turn on, so the config does not change its figure).
 */
function floorOf(rows: RowResult[], row: RowResult, name: "bare" | "floor"): FloorFigures | undefined {
  const own = row.figures[name];
  if (own) return { figures: own, own: true };
  const basic = find(rows, "basic", row.scenario, row.load)?.figures[name];
  return basic ? { figures: basic, own: false } : undefined;
}

const borrowedMark = (floor: FloorFigures | undefined) => (floor && !floor.own ? "*" : "");

/** One figure of a floor, `*` when borrowed from the basic config, "-" when there is none. */
function floorFigure(floor: FloorFigures | undefined, pick: (f: Figures) => number | undefined, digits = 0): string {
  return floor ? `${fmt(pick(floor.figures), digits)}${borrowedMark(floor)}` : "-";
}

/** A floor's figure with what it adds to direct's, e.g. "2.03* (+1.62)". */
function floorAdded(floor: FloorFigures | undefined, pick: (f: Figures) => number | undefined, direct: number | undefined): string {
  return floor ? `${floorFigure(floor, pick, 2)}${added(pick(floor.figures), direct)}` : "-";
}

const times = (
  value: number | undefined,
  base: number | undefined,
) => (value === undefined || base === undefined || !base ? "-" : `${(value / base).toFixed(2)}x`);

export function throughputTable(results: Results): string {
  const rows = results.rows.filter((r) => r.load === "c32");
  return table(
    [
      "scenario",
      "config",
      "req/s direct",
      "req/s gateway",
      "req/s bare proxy",
      "p50 ms d / gw / bare / floor",
      "p99 ms d / gw / bare / floor",
      "CPU µs/req gw",
      "CPU µs/req bare / floor",
      "gw CPU x bare / x floor",
      "gw peak RSS MB",
      "core 0 busy with others",
      "wrong",
    ],
    rows.map((row) => {
      const { direct: d, gateway: g, bare: ownBare } = row.figures;
      const b = floorOf(results.rows, row, "bare");
      const f = floorOf(results.rows, row, "floor");
      const wrong = Object.values(row.figures).reduce((sum, x) => sum + x.errors + x.invalid, 0);
      return [
        row.title,
        row.variant,
        fmt(d?.rps),
        `${fmt(g?.rps)}${ratio(g?.rps, d?.rps)}`,
        ownBare ? `${fmt(ownBare.rps)}${ratio(ownBare.rps, d?.rps)}` : "-",
        `${fmt(d?.p50Ms, 2)} / ${fmt(g?.p50Ms, 2)} / ${ownBare ? fmt(ownBare.p50Ms, 2) : "-"} / ${floorFigure(f, (x) => x.p50Ms, 2)}`,
        `${fmt(d?.p99Ms, 2)} / ${fmt(g?.p99Ms, 2)} / ${ownBare ? fmt(ownBare.p99Ms, 2) : "-"} / ${floorFigure(f, (x) => x.p99Ms, 2)}`,
        fmt(g?.cpuUsPerRequest),
        `${floorFigure(b, (x) => x.cpuUsPerRequest)} / ${floorFigure(f, (x) => x.cpuUsPerRequest)}`,
        `${times(g?.cpuUsPerRequest, b?.figures.cpuUsPerRequest)} / ${times(g?.cpuUsPerRequest, f?.figures.cpuUsPerRequest)}`,
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
    [
      "scenario",
      "config",
      "p50 ms direct",
      "p50 gateway (added)",
      "p50 bare (added)",
      "p50 floor (added)",
      "p99 ms direct",
      "p99 gateway (added)",
      "p99 bare (added)",
      "p99 floor (added)",
      "first event p50 d / gw / floor (added)",
      "first event p99 d / gw / floor (added)",
      "CPU µs/req gw / bare / floor",
      "core 0 busy with others",
    ],
    rows.map((row) => {
      const { direct: d, gateway: g, bare: b } = row.figures;
      const f = floorOf(results.rows, row, "floor");
      const firstEvent = (pick: (x: Figures) => number | undefined) => {
        const [direct, gateway] = [d ? pick(d) : undefined, g ? pick(g) : undefined];
        return isStream(row) ? `${fmt(direct, 2)} / ${fmt(gateway, 2)}${added(gateway, direct)} / ${floorAdded(f, pick, direct)}` : "-";
      };
      return [
        row.title,
        row.variant,
        fmt(d?.p50Ms, 2),
        `${fmt(g?.p50Ms, 2)}${added(g?.p50Ms, d?.p50Ms)}`,
        b ? `${fmt(b.p50Ms, 2)}${added(b.p50Ms, d?.p50Ms)}` : "-",
        floorAdded(f, (x) => x.p50Ms, d?.p50Ms),
        fmt(d?.p99Ms, 2),
        `${fmt(g?.p99Ms, 2)}${added(g?.p99Ms, d?.p99Ms)}`,
        b ? `${fmt(b.p99Ms, 2)}${added(b.p99Ms, d?.p99Ms)}` : "-",
        floorAdded(f, (x) => x.p99Ms, d?.p99Ms),
        firstEvent((x) => x.ttfbP50Ms),
        firstEvent((x) => x.ttfbP99Ms),
        `${fmt(g?.cpuUsPerRequest)} / ${b ? fmt(b.cpuUsPerRequest) : "-"} / ${floorFigure(f, (x) => x.cpuUsPerRequest)}`,
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
    [
      "scenario",
      "config",
      "CPU µs/req bare",
      "CPU µs/req framework floor (x bare)",
      "CPU µs/req gateway (x floor)",
      "gateway x bare",
      "req/s floor",
      "floor peak RSS MB",
    ],
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
      `${fmt(jobs.jobsPerSecond)} jobs/s (direct uploads of the same file: ${fmt(jobs.directUploadsPerSecond)}/s${
        ratio(jobs.jobsPerSecond, jobs.directUploadsPerSecond)
      })`,
      `${fmt(jobs.cpuUsPerJob)} µs CPU/job`,
      `${fmt(jobs.peakRssMb)} MB peak RSS`,
      String(jobs.errors + jobs.invalid),
    ]);
  }
  const batch = results.batches;
  if (batch) {
    const slower = (during: number, alone: number) => `${(during / alone).toFixed(2)}x`;
    lines.push([
      `batch end to end (upload, create, poll), ${batch.lines} chat lines`,
      `${fmt(batch.linesPerSecond)} lines/s; interactive p50/p99 ${fmt(batch.interactive.p50Ms, 1)}/${fmt(batch.interactive.p99Ms, 1)} ms alone, ${
        fmt(batch.interactiveDuringBatch.p50Ms, 1)
      }/${fmt(batch.interactiveDuringBatch.p99Ms, 1)} ms during the batch (${slower(batch.interactiveDuringBatch.p50Ms, batch.interactive.p50Ms)}/${
        slower(batch.interactiveDuringBatch.p99Ms, batch.interactive.p99Ms)
      })`,
      `${fmt(batch.cpuUsPerLine)} µs CPU/line (interactive ${fmt(batch.interactive.cpuUsPerRequest)} µs/request)`,
      `${fmt(batch.peakRssMb)} MB peak RSS`,
      String(batch.errors + batch.interactive.errors + batch.interactiveDuringBatch.errors),
    ]);
  }
  for (const upload of results.uploads) {
    lines.push([
      `${upload.name}, 100 MiB`,
      `${upload.target}: ${fmt(upload.seconds, 2)} s`,
      "-",
      `+${fmt(upload.growthMb)} MB peak RSS`,
      upload.ok ? "0" : "1",
    ]);
  }
  return table(["scenario", "result", "CPU", "memory", "wrong"], lines);
}

export function targetsTable(results: Results): string {
  return table(
    ["target", "limit", "measured", "met"],
    results.targets.map((t) => [t.target, t.limit, t.value, t.met === "n/a" ? "n/a" : t.met ? "yes" : "**no**"]),
  );
}

/** The gateway's and the framework floor's figures of one row (the floor's may be the basic config's). */
interface VsFloor {
  row: RowResult;
  gateway: Figures;
  floor: FloorFigures;
}

function vsFloor(rows: RowResult[], row: RowResult | undefined): VsFloor | undefined {
  const gateway = row?.figures.gateway;
  const floor = row ? floorOf(rows, row, "floor") : undefined;
  return row && gateway && floor ? { row, gateway, floor } : undefined;
}

/** Every row at `load` that has both the gateway's and a framework floor figure. */
function allVsFloor(rows: RowResult[], load: LoadId): VsFloor[] {
  return rows.filter((r) => r.load === load).flatMap((r) => vsFloor(rows, r) ?? []);
}

/** The pair where `measure` is largest, with its measure. */
function worst(pairs: VsFloor[], measure: (p: VsFloor) => number): { pair: VsFloor; value: number } | undefined {
  return pairs.map((pair) => ({ pair, value: measure(pair) })).sort((a, b) => b.value - a.value)[0];
}

const LLM_CONFIGS = ["basic", "prod-memory", "prod-redis"] as const;
const LOAD_NAMES: Record<LoadId, string> = { c32: "32 connections", r100: "100 req/s" };

/** A target this run has no figures for (an --only run, no Redis, an older results file). */
function unmeasured(target: string, limit: string, needs: string): TargetCheck {
  return { target, limit, value: `needs ${needs}`, met: "n/a" };
}

const floorNeeded = (scenario: string, variant: string, load: LoadId) =>
  variant === "basic"
    ? `the gateway's and the framework floor's ${scenario} figures at ${LOAD_NAMES[load]} (basic)`
    : `the gateway's ${scenario} figures at ${LOAD_NAMES[load]} (${variant}) and the framework floor's (${variant} or basic)`;
const where = (pair: VsFloor) => `${pair.row.scenario}, ${pair.row.variant}`;
const signed = (value: number) => `${value >= 0 ? "+" : ""}${value.toFixed(2)}`;

/** The gateway's CPU per request of one scenario and config against the floor's, at 32 connections. */
function cpuVsFloor(rows: RowResult[], target: string, variant: string, scenario: string, max: number): TargetCheck {
  const limit = `<= ${max.toFixed(1)}x`;
  const pair = vsFloor(rows, find(rows, variant, scenario, "c32"));
  if (!pair) return unmeasured(target, limit, floorNeeded(scenario, variant, "c32"));
  const r = pair.gateway.cpuUsPerRequest / pair.floor.figures.cpuUsPerRequest;
  return {
    target,
    limit,
    value: `${fmt(pair.gateway.cpuUsPerRequest)} / ${floorFigure(pair.floor, (f) => f.cpuUsPerRequest)} µs = ${r.toFixed(2)}x`,
    met: r <= max,
  };
}

/** p99 at 32 connections, the worst scenario as a multiple of the floor's. */
function p99VsFloor(rows: RowResult[]): TargetCheck {
  const [target, limit] = ["p99 at 32 connections vs framework floor (worst scenario)", "<= 3x"];
  const pairs = allVsFloor(rows, "c32");
  const top = worst(pairs, (p) => p.gateway.p99Ms / p.floor.figures.p99Ms);
  if (!top) return unmeasured(target, limit, "32-connection rows with the framework floor");
  const { pair, value } = top;
  return {
    target,
    limit,
    value: `${value.toFixed(2)}x (${where(pair)}: ${fmt(pair.gateway.p99Ms, 2)} / ${
      floorFigure(pair.floor, (f) => f.p99Ms, 2)
    } ms; worst of ${pairs.length} rows)`,
    met: value <= 3,
  };
}

/** Latency at 100 req/s the gateway adds to the floor's, the worst scenario. */
function addedOverFloor(rows: RowResult[], percentile: "p50" | "p99", maxMs: number): TargetCheck {
  const [target, limit] = [`added latency at 100 req/s vs framework floor, ${percentile} (worst scenario)`, `<= +${maxMs} ms`];
  const pick = (f: Figures) => (percentile === "p50" ? f.p50Ms : f.p99Ms);
  const pairs = allVsFloor(rows, "r100");
  const top = worst(pairs, (p) => pick(p.gateway) - pick(p.floor.figures));
  if (!top) return unmeasured(target, limit, "100 req/s rows with the framework floor");
  const { pair, value } = top;
  return {
    target,
    limit,
    value: `${signed(value)} ms (${where(pair)}: ${fmt(pick(pair.gateway), 2)} vs ${floorFigure(pair.floor, pick, 2)} ms; worst of ${pairs.length} rows)`,
    met: value <= maxMs,
  };
}

/** Time to the first streamed event at 100 req/s (p50), the gateway's over the floor's. */
function firstEventOverFloor(rows: RowResult[], variant: string): TargetCheck {
  const [target, limit] = [`stream, first event p50 at 100 req/s vs framework floor (${variant})`, "<= +0.3 ms"];
  const pair = vsFloor(rows, find(rows, variant, "stream", "r100"));
  const gateway = pair?.gateway.ttfbP50Ms;
  const floor = pair?.floor.figures.ttfbP50Ms;
  if (!pair || gateway === undefined || floor === undefined) return unmeasured(target, limit, floorNeeded("stream", variant, "r100"));
  const value = gateway - floor;
  return { target, limit, value: `${signed(value)} ms (${fmt(gateway, 2)} vs ${floorFigure(pair.floor, (f) => f.ttfbP50Ms, 2)} ms)`, met: value <= 0.3 };
}

/** The guardrail scenarios' aims (docs/guardrails.md#cost): CPU per request with the rules over the same request without them. */
const GUARDRAIL_AIMS = [
  { scenario: "guard-input-2k", what: "input pii + regex masks on a 2 KB prompt (LLM miss)", max: 1.15 },
  { scenario: "guard-stream-out", what: "output mask on the 22-event stream", max: 1.3 },
] as const;

/** The gateway's CPU per request with the guardrail rules over that of a gateway of the same config without them, on the same requests (32 connections). */
function guardrailCost(rows: RowResult[]): TargetCheck[] {
  return GUARDRAIL_AIMS.map(({ scenario, what, max }) => {
    const [target, limit] = [`guardrails: ${what}, CPU/request vs the same gateway without rules (basic)`, `<= ${max.toFixed(2)}x`];
    const figures = find(rows, "basic", scenario, "c32")?.figures;
    const [guarded, unguarded] = [figures?.gateway, figures?.unguarded];
    if (!guarded || !unguarded) return unmeasured(target, limit, `the ${scenario} row (basic) with its unguarded baseline`);
    const r = guarded.cpuUsPerRequest / unguarded.cpuUsPerRequest;
    return { target, limit, value: `${fmt(guarded.cpuUsPerRequest)} / ${fmt(unguarded.cpuUsPerRequest)} µs = ${r.toFixed(2)}x`, met: r <= max };
  });
}

/**
 * Deno against Node, gateway CPU per request at 32 connections: the non-streaming scenarios
 * judged (worst one), the streams only reported. Only runs of the same length compare (a quick
 * run's figures are noisier and warmer).
 */
function denoVsNode(results: Results, other: Results | undefined): TargetCheck[] {
  const judged = "Deno vs Node, gateway CPU/request, non-streaming (worst scenario)";
  const reported = "Deno vs Node, gateway CPU/request, streams (reported, not judged)";
  if (!other || other.runtime === results.runtime || other.mode !== results.mode) {
    const needs =
      `a ${results.mode} run of each runtime (npm run bench -- --runtime deno compares with the last Node run; saved runs: --report FILE --compare OTHER)`;
    return [unmeasured(judged, "<= 1.3x", needs), unmeasured(reported, "-", "the same as the row above")];
  }
  const [deno, node] = results.runtime === "deno" ? [results, other] : [other, results];
  const pairs = deno.rows
    .filter((r) => r.load === "c32")
    .flatMap((row) => {
      const [d, n] = [row.figures.gateway, find(node.rows, row.variant, row.scenario, "c32")?.figures.gateway];
      return d && n ? [{ row, text: `${fmt(d.cpuUsPerRequest)} vs ${fmt(n.cpuUsPerRequest)} µs`, r: d.cpuUsPerRequest / n.cpuUsPerRequest }] : [];
    });
  const nodeRun = `Node run of ${node.date}`;
  const top = pairs.filter((p) => !isStream(p.row)).sort((a, b) => b.r - a.r)[0];
  const streams = pairs.filter((p) => isStream(p.row));
  return [
    top
      ? {
        target: `${judged}; ${nodeRun}`,
        limit: "<= 1.3x",
        value: `${top.r.toFixed(2)}x (${top.row.scenario}, ${top.row.variant}: ${top.text})`,
        met: top.r <= 1.3,
      }
      : unmeasured(judged, "<= 1.3x", "non-streaming 32-connection rows in both runs"),
    streams.length > 0
      ? { target: `${reported}; ${nodeRun}`, limit: "-", value: streams.map((p) => `${p.row.variant} ${p.r.toFixed(2)}x (${p.text})`).join("; "), met: "n/a" }
      : unmeasured(reported, "-", "stream rows at 32 connections in both runs"),
  ];
}

/**
 * Checks of the earlier targets still worth keeping (memory): not the current ones
 * (docs/design.md#performance-targets), labelled so.
 */
function memoryChecks(results: Results): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const top = results.rows
    // Not the workers' rows: their figure is the sum of several processes.
    .filter((r) => r.load === "c32" && r.figures.gateway && r.figures.gateway.children === undefined)
    .sort((a, b) => (b.figures.gateway?.peakRssMb ?? 0) - (a.figures.gateway?.peakRssMb ?? 0))[0];
  if (top) {
    const peak = top.figures.gateway?.peakRssMb ?? 0;
    checks.push({
      target: "gateway peak RSS at 32 connections, worst (earlier target, kept)",
      limit: "<= 120 MB",
      value: `${fmt(peak)} MB (${top.scenario}, ${top.variant})`,
      met: peak <= 120,
    });
  }
  for (const upload of results.uploads.filter((u) => u.target === "gateway")) {
    checks.push({
      target: `100 MiB upload, RSS growth (${upload.name}; earlier target, kept)`,
      limit: "<= 64 MB",
      value: `+${fmt(upload.growthMb)} MB`,
      met: upload.growthMb <= 64,
    });
  }
  return checks;
}

/**
 * Judges the performance targets (docs/design.md#performance-targets) on this run's figures,
 * against the framework floor; `other`: the other runtime's results, for the Deno check. Where a
 * config runs no floor (cache hit and stream in the prod configs), the floor's figure is the basic
 * config's of the same scenario and load.
 */
export function checkTargets(results: Results, other?: Results): TargetCheck[] {
  const rows = results.rows;
  return [
    ...(["prod-memory", "prod-redis"] as const).map((variant) => cpuVsFloor(rows, `CPU per LLM miss vs framework floor (${variant})`, variant, "llm-miss", 2)),
    p99VsFloor(rows),
    addedOverFloor(rows, "p50", 0.5),
    addedOverFloor(rows, "p99", 2),
    ...LLM_CONFIGS.map((variant) => cpuVsFloor(rows, `CPU per 22-event stream vs framework floor (${variant})`, variant, "stream", 1.5)),
    ...LLM_CONFIGS.map((variant) => firstEventOverFloor(rows, variant)),
    ...LLM_CONFIGS.map((variant) => cpuVsFloor(rows, `CPU per cache hit vs framework floor (${variant})`, variant, "llm-hit", 1.2)),
    ...denoVsNode(results, other),
    ...scalingTargets(results),
    ...guardrailCost(rows),
    { target: "wrong answers (status, body or transport error), everywhere", limit: "0", value: String(results.wrong), met: results.wrong === 0 },
    ...memoryChecks(results),
  ];
}

/** A titled section, or nothing when `body` is empty. */
function section(title: string, body: string, note?: string): string[] {
  return body ? [title, "", ...(note ? [note, ""] : []), body, ""] : [];
}

const BORROWED =
  "`*` floor figure from the basic config of the same scenario and load (the floors have no features to turn on, so the config does not change them).";

export function printAll(results: Results): string {
  return [
    `## Throughput at ${32} connections (${results.loadGenerator}), ${results.runtime}, ${results.mode} run`,
    "",
    throughputTable(results),
    "",
    BORROWED,
    '"core 0 busy with others": the share of the gateway\'s core that other processes used during the rounds; above a few percent, latencies and rates are disturbed (CPU per request much less).',
    "",
    "## Latency at a fixed 100 requests/s",
    "",
    latencyTable(results),
    "",
    BORROWED,
    "",
    "## The two floors: the bare node:http proxy, and Hono on @hono/node-server with the gateway's client",
    "",
    floorTable(results),
    "",
    "## Async jobs and large uploads",
    "",
    asyncTable(results),
    "",
    ...section("## Growth: models in the config and distinct consumers (embedded store, random model and consumer per request)", growthTable(results)),
    ...section(
      "## Workers: server.workers 1 and 2 (prod-redis, LLM miss; the gateway on both cores, which the load generator, mock and Redis share)",
      workersTable(results),
    ),
    ...section("## usage.write: before_answer (prod-redis) / after_answer (prod-redis-after-answer)", usageWriteTable(results)),
    ...section(
      "## Guards",
      results.guards ? guardsTable(results.guards) : "",
      "Each row against the figures of bench/guards.json with its margin: CPU per request as a multiple of the reference process of the same run, peak RSS as it is.",
    ),
    "## Targets",
    "",
    "The performance targets (docs/design.md#performance-targets), against the framework floor (the guardrail rows: against the same gateway without its rules); the last rows are earlier targets kept as guards.",
    "",
    targetsTable(results),
    "",
    BORROWED,
  ].join("\n");
}
