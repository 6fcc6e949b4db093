/** The soak's results: the JSON written to bench/results/, the verdict, and the tables printed. */
import { type Machine, table } from "./report.ts";
import type { FdCounts, ProcessSample } from "./soak-sampler.ts";
import type { JobsFigures } from "./soak-jobs.ts";

export interface KindFigures {
  kind: string;
  /** Requests per second asked for (open loop). */
  rate: number;
  requests: number;
  errors: number;
  invalid: number;
  p50Ms: number;
  p99Ms: number;
  /** Requests sent more than 5 ms after their slot (the client fell behind). */
  late: number;
}

/**
 * The pass rules. Memory: the least-squares trend of RSS (sampled right after a full GC)
 * over the samples after the warm-up, under 1 MB/min: 5 minutes at 200 req/s is 60,000
 * requests, so a leak of ~100 bytes per request would cross it. Descriptors: under load
 * their number follows the connections and the jobs in flight, so they are judged once the
 * load stopped and the soak's clients closed their connections: the gateway must have closed
 * its side of each, and hold no more other descriptors (files, pipes...) than before the
 * load, give or take a couple (its pools' timers, a log file).
 */
export const MAX_RSS_SLOPE_MB_PER_MIN = 1;
export const MAX_OTHER_FD_GROWTH = 2;
/** Shorter runs report the slope but do not judge it: a few samples cannot tell a trend from noise. */
export const MIN_JUDGED_SECONDS = 180;

export interface SoakResults {
  date: string;
  runtime: "node" | "deno";
  machine: Machine;
  store: "redis" | "embedded";
  plugins: string[];
  durationSeconds: number;
  totalRate: number;
  warmupSeconds: number;
  sampleEverySeconds: number;
  kinds: KindFigures[];
  jobs: Omit<JobsFigures, "completionMs"> & { completionP50Ms: number; completionP99Ms: number };
  gateway: {
    samples: ProcessSample[];
    /** RSS after a full GC (or as it is, with --no-gc), MB per minute over the samples after the warm-up. */
    rssSlopeMbPerMin: number;
    heapSlopeMbPerMin?: number;
    rssMb: { first: number; afterWarmup: number; last: number; max: number };
    heapMb?: { first: number; afterWarmup: number; last: number };
    /** Once the load stopped and the soak's connections closed (after a full GC too). */
    idleAfter: { rssMb: number; heapMb?: number };
    /** Before the load, after the warm-up, at the last sample under load, and once the clients closed their connections. */
    fds: { first: FdCounts; afterWarmup: FdCounts; last: FdCounts; idleAfter: FdCounts; maxTotal: number };
    /** Whether each sample was taken right after a full GC (through the inspector). */
    gcBeforeSample: boolean;
    /** Mean share of one core after the warm-up. */
    cpuMean: number;
  };
  /** The private redis-server's RSS, first and last sample (the store's growth, not the gateway's). */
  redisRssMb?: { first: number; last: number };
  checks: Array<{ check: string; value: string; pass: boolean | "n/a" }>;
  pass: boolean;
}

const fmt = (value: number, digits = 1) => (Number.isNaN(value) ? "-" : value.toFixed(digits));
const signed = (value: number) => `${value >= 0 ? "+" : ""}${value}`;
const fdText = (fds: FdCounts) => `${fds.total} (${fds.clients}/${fds.upstream}/${fds.redis}/${fds.other})`;

export function verdict(results: Omit<SoakResults, "checks" | "pass">): Pick<SoakResults, "checks" | "pass"> {
  const { kinds, jobs, gateway } = results;
  const wrong = kinds.reduce((sum, k) => sum + k.errors + k.invalid, 0);
  const jobErrors = jobs.submitErrors + jobs.wrong + jobs.pollErrors;
  const judged = results.durationSeconds >= MIN_JUDGED_SECONDS;
  const otherGrowth = gateway.fds.idleAfter.other - gateway.fds.first.other;
  const clientsLeft = gateway.fds.idleAfter.clients - gateway.fds.first.clients;
  const checks: SoakResults["checks"] = [
    { check: "errors and wrong answers (all kinds)", value: String(wrong), pass: wrong === 0 },
    { check: "job submission, poll and result errors", value: String(jobErrors), pass: jobErrors === 0 },
    {
      check: "jobs lost (submitted, never read completed)",
      value: `${jobs.lost} (${jobs.completed} of ${jobs.submitted} completed)`,
      pass: jobs.lost === 0 && jobs.completed === jobs.submitted,
    },
    {
      check: `gateway RSS trend after the ${results.warmupSeconds} s warm-up < ${MAX_RSS_SLOPE_MB_PER_MIN} MB/min`,
      value: `${fmt(gateway.rssSlopeMbPerMin, 2)} MB/min`,
      pass: judged ? gateway.rssSlopeMbPerMin < MAX_RSS_SLOPE_MB_PER_MIN : "n/a",
    },
    {
      check: `descriptors other than connections, idle after the load - before it <= ${MAX_OTHER_FD_GROWTH}`,
      value: signed(otherGrowth),
      pass: otherGrowth <= MAX_OTHER_FD_GROWTH,
    },
    { check: "client connections left open by the gateway once the soak closed its own", value: String(clientsLeft), pass: clientsLeft <= 0 },
  ];
  return { checks, pass: checks.every((c) => c.pass !== false) };
}

export function printSoak(results: SoakResults): string {
  const { gateway, jobs } = results;
  const m = results.machine;
  const lines = [
    `## Soak: ${results.durationSeconds} s of mixed load at ${results.totalRate} req/s, gateway on ${results.runtime}, ${results.store} store (${results.date})`,
    `Machine: ${m.nproc} cores (${m.cpu}), ${m.os}, Node ${m.node}${m.deno ? `, ${m.deno}` : ""}, pinned: ${m.pinned}`,
    `Plugins: ${results.plugins.join(", ")}`,
    "",
    table(
      ["kind", "req/s", "requests", "errors", "wrong body", "p50 ms", "p99 ms", "sent late"],
      results.kinds.map((
        k,
      ) => [k.kind, String(k.rate), String(k.requests), String(k.errors), String(k.invalid), fmt(k.p50Ms, 2), fmt(k.p99Ms, 2), String(k.late)]),
    ),
    "",
    table(
      [
        "jobs submitted",
        "completed",
        "lost",
        "wrong / failed",
        "submit errors",
        "polls",
        "poll errors",
        "consumed on first read (410 after)",
        "submit to completed p50 / p99 ms",
      ],
      [
        [jobs.submitted, jobs.completed, jobs.lost, jobs.wrong, jobs.submitErrors, jobs.polls, jobs.pollErrors, jobs.consumedAfterRead].map(String).concat(
          `${fmt(jobs.completionP50Ms, 0)} / ${fmt(jobs.completionP99Ms, 0)}`,
        ),
      ],
    ),
    "",
    table(
      ["t s", ...gateway.samples.map((s) => fmt(s.t, 0))],
      [
        [gateway.gcBeforeSample ? "RSS MB (after GC)" : "RSS MB", ...gateway.samples.map((s) => fmt(s.rssMb, 1))],
        ...(gateway.gcBeforeSample ? [["V8 heap MB after GC", ...gateway.samples.map((s) => fmt(s.heapMb ?? Number.NaN, 1))]] : []),
        ["fds: clients / backend / redis / other", ...gateway.samples.map((s) => `${s.fds.clients}/${s.fds.upstream}/${s.fds.redis}/${s.fds.other}`)],
        ["CPU % of a core", ...gateway.samples.map((s) => fmt(s.cpu * 100, 0))],
      ],
    ),
    "",
    `Gateway RSS${gateway.gcBeforeSample ? " (after a full GC)" : ""}: ${fmt(gateway.rssMb.first)} MB before the load, ${
      fmt(gateway.rssMb.afterWarmup)
    } after the ${results.warmupSeconds} s warm-up, ` +
    `${fmt(gateway.rssMb.last)} at the end, max ${fmt(gateway.rssMb.max)}; trend after the warm-up ${fmt(gateway.rssSlopeMbPerMin, 2)} MB/min` +
    (gateway.heapMb
      ? `; V8 heap after GC ${fmt(gateway.heapMb.first)} / ${fmt(gateway.heapMb.afterWarmup)} / ${fmt(gateway.heapMb.last)} MB, trend ${
        fmt(gateway.heapSlopeMbPerMin ?? Number.NaN, 2)
      } MB/min`
      : "") +
    `; idle after the load ${fmt(gateway.idleAfter.rssMb)} MB RSS${
      gateway.idleAfter.heapMb !== undefined ? `, ${fmt(gateway.idleAfter.heapMb)} MB heap` : ""
    }` +
    `. Descriptors (total: clients/backend/redis/other) before the load ${fdText(gateway.fds.first)}, after the warm-up ${fdText(gateway.fds.afterWarmup)}, ` +
    `last under load ${fdText(gateway.fds.last)}, idle after ${fdText(gateway.fds.idleAfter)}, max total ${gateway.fds.maxTotal}. ` +
    `CPU ${fmt(gateway.cpuMean * 100, 0)}% of a core.` +
    (results.redisRssMb ? ` redis-server RSS ${fmt(results.redisRssMb.first)} -> ${fmt(results.redisRssMb.last)} MB.` : ""),
    "",
    table(
      ["check", "value", "pass"],
      results.checks.map((c) => [c.check, c.value, c.pass === "n/a" ? `n/a (run < ${MIN_JUDGED_SECONDS} s)` : c.pass ? "yes" : "**NO**"]),
    ),
    "",
    results.pass ? "soak: PASS" : "soak: FAIL",
  ];
  return lines.join("\n");
}
