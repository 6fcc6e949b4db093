/**
 * The fallback closed-loop generator when wrk is not installed: autocannon (a devDependency)
 * in its own process on the non-server core, `node autocannon-runner.js SPEC.json`. It
 * prints one JSON line. It costs several times wrk's CPU per request, which caps the direct
 * baseline lower; the figures say which generator ran.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { CONSUMER_HEADER, consumerOf, isValid, type RequestSpec, withRandomModel } from "./spec.ts";

interface AutocannonResult {
  requests: { total: number };
  duration: number;
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  mismatches: number;
}
interface AutocannonRequest {
  method: string;
  headers: Record<string, string>;
  body: string | Buffer;
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>;

export interface RunnerInput {
  spec: Omit<RequestSpec, "body"> & { bodyFile: string };
  connections: number;
  seconds: number;
}

const input = JSON.parse(readFileSync(process.argv[2], "utf8")) as RunnerInput;
const body = readFileSync(input.spec.bodyFile);
const spec: RequestSpec = { ...input.spec, body };
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;
let counter = 0;
/** Unique per run: the counter restarts each run, and a warm-up's answers are still cached when the next round starts. */
const run = `${process.pid}-${Date.now()}`;

const result = await autocannon({
  url: spec.url,
  connections: input.connections,
  duration: input.seconds,
  timeout: 10,
  method: spec.method,
  headers: spec.headers,
  body,
  requests: [
    {
      setupRequest(request: AutocannonRequest): AutocannonRequest {
        counter++;
        const consumer = consumerOf(spec, counter);
        const headers = consumer ? { ...request.headers, [CONSUMER_HEADER]: consumer } : request.headers;
        const varied = spec.uniqueMarker || spec.models;
        const text = varied
          ? withRandomModel(spec, spec.uniqueMarker ? body.toString().replace(spec.uniqueMarker, `ac-${run}-${counter}`) : body.toString())
          : body;
        return { ...request, headers, body: text };
      },
    },
  ],
  // Status is checked by autocannon's non2xx count; the body here.
  verifyBody: (answer: string) => isValid(spec, spec.expect.status, answer) === "ok",
});

process.stdout.write(
  `BENCH_JSON ${
    JSON.stringify({
      requests: result.requests.total,
      seconds: result.duration,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      errors: result.errors + result.timeouts + result.non2xx,
      invalid: result.mismatches,
    })
  }\n`,
);
