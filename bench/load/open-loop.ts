/**
 * The fixed-rate generator (open loop): one request every 1/rate seconds whether or not the
 * previous ones answered, over pooled keep-alive connections, timing each request from the
 * moment it was written to its first body byte (for a stream: its first event) and to its
 * last. At 100 requests/s the client's own cost is negligible, so it runs in the bench
 * process (pinned to the non-server core) on plain node:http for exact timestamps.
 */
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { CONSUMER_HEADER, consumerOf, isValid, type OpenLoopResult, percentile, type RequestSpec, withRandomModel } from "./spec.ts";

interface Sample {
  ttfb: number;
  total: number;
}

function once(
  spec: RequestSpec,
  agent: Agent,
  body: Buffer,
  headers: Record<string, string>,
): Promise<{ sample?: Sample; outcome: "ok" | "error" | "invalid" }> {
  return new Promise((resolve) => {
    const url = new URL(spec.url);
    const started = performance.now();
    let first = 0;
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: spec.method,
        agent,
        headers: { ...headers, "content-length": String(body.length) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => {
          if (first === 0) first = performance.now();
          chunks.push(chunk);
        });
        res.on("end", () => {
          const end = performance.now();
          const outcome = isValid(spec, res.statusCode ?? 0, Buffer.concat(chunks).toString());
          resolve({ outcome, sample: { ttfb: (first || end) - started, total: end - started } });
        });
        res.on("error", () => resolve({ outcome: "error" }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve({ outcome: "error" }));
    req.end(body);
  });
}

export async function runOpenLoop(spec: RequestSpec, rate: number, seconds: number): Promise<OpenLoopResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const samples: Sample[] = [];
  let errors = 0;
  let invalid = 0;
  let late = 0;
  const pending: Promise<void>[] = [];
  const start = performance.now();
  const text = spec.body.toString();
  for (let i = 0; i < total; i++) {
    const due = start + i * interval;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait - 0.5));
    while (performance.now() < due) {
      // Spin the last half millisecond: timers are only millisecond-accurate.
    }
    if (performance.now() - due > 5) late++;
    const headers: Record<string, string> = { ...spec.headers };
    const consumer = consumerOf(spec, i);
    if (consumer) headers[CONSUMER_HEADER] = consumer;
    const body = spec.uniqueMarker || spec.models
      ? Buffer.from(withRandomModel(spec, spec.uniqueMarker ? text.replace(spec.uniqueMarker, `ol-${Date.now()}-${i}`) : text))
      : spec.body;
    pending.push(
      once(spec, agent, body, headers).then(({ sample, outcome }) => {
        if (outcome === "error") errors++;
        else if (outcome === "invalid") invalid++;
        if (sample && outcome === "ok") samples.push(sample);
      }),
    );
  }
  await Promise.all(pending);
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();
  const totals = samples.map((s) => s.total).sort((a, b) => a - b);
  const ttfbs = samples.map((s) => s.ttfb).sort((a, b) => a - b);
  return {
    requests: samples.length + errors + invalid,
    seconds: elapsed,
    p50Ms: percentile(totals, 50),
    p99Ms: percentile(totals, 99),
    ttfbP50Ms: percentile(ttfbs, 50),
    ttfbP99Ms: percentile(ttfbs, 99),
    errors,
    invalid,
    late,
    totalsMs: totals,
    ttfbsMs: ttfbs,
  };
}
