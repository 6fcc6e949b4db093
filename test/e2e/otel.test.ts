/**
 * OpenTelemetry export as a collector sees it: the real gateway exports OTLP/HTTP to a
 * local receiver. Asserted: the server span (route template, service type, model,
 * consumer, status) as a child of the caller's traceparent, a client span per backend
 * attempt (host, attempt number, outcome) as children of it, traceparent forwarded to the
 * backends, the exporter headers and service name, sampling at 1 and 0, ignored paths;
 * a job run by a separate relay process in the submitting request's trace, and the log
 * lines as OTLP log records with their trace context. Jobs use the suite's redis-server
 * (database 14, flushed first) and s3rver (this file's bucket `otel-e2e`).
 */
import { createClient } from "redis";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { type FakeBackend, startBackend } from "../fixtures/http-backend.ts";
import { flatten, type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../fixtures/otlp-receiver.ts";
import { type GatewayProcess, startGateway, waitUntil } from "../support/gateway-process.ts";
import { storesYaml } from "../support/stores-yaml.ts";

const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

let receiver: OtlpReceiver;
let echo: FakeBackend;
let failing: FakeBackend;
const running: GatewayProcess[] = [];

beforeAll(async () => {
  [receiver, echo, failing] = await Promise.all([
    startOtlpReceiver(),
    startBackend({ kind: "echo" }),
    startBackend({ kind: "status", status: 503, body: "down" }),
  ]);
});
afterAll(async () => {
  await Promise.all([receiver.close(), echo.close(), failing.close()]);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.kill()));
  receiver.spans.length = 0;
  receiver.exports.length = 0;
  receiver.metrics.length = 0;
  receiver.logs.length = 0;
  echo.reset();
  failing.reset();
});

const config = (traces: string, metrics = "") => `
server:
  consumer_header: X-Consumer
opentelemetry:
  enabled: true
  service_name: gateway-under-test
  exporter:
    endpoint: ${receiver.url}
    headers: { x-collector-token: s3cret }
  traces:
${traces}
${metrics}
services:
  - type: ocr
    model: reader
    operations: { read: [/v1/read, "/v2/models/{model}/infer"] }
    backends:
      - { url: ${failing.url}, weight: 1 }
      - { url: ${echo.url}, weight: 0 }
  - type: ocr
    model: quiet
    inference_url: ${echo.url}
    operations: { read: [/v1/quiet] }
`;

async function start(traces: string): Promise<GatewayProcess> {
  // A short batch delay so spans reach the receiver within the test's patience.
  const gw = await startGateway(config(traces), { env: { OTEL_BSP_SCHEDULE_DELAY: "100" } });
  running.push(gw);
  return gw;
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

function read(gw: GatewayProcess, headers: Record<string, string> = {}, path = "/v1/read"): Promise<Response> {
  const model = path === "/v1/quiet" ? "quiet" : "reader";
  return fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model, text: "hi" }),
  });
}

async function spansOfTrace(traceId: string, count: number): Promise<ReceivedSpan[]> {
  await waitUntil(
    () => receiver.spans.filter((s) => s.traceId === traceId).length >= count,
    15_000,
    () => `spans received: ${JSON.stringify(receiver.spans, null, 1)}`,
  );
  return receiver.spans.filter((s) => s.traceId === traceId);
}

/** The traceparent a backend got: 00-<trace id>-<span id>-<flags>. */
function traceparentOf(backend: FakeBackend, index = 0): string[] {
  const header = backend.requests[index]?.headers.traceparent;
  if (typeof header !== "string") throw new Error(`backend request ${index} carried no traceparent`);
  return header.split("-");
}

describe("OpenTelemetry traces", () => {
  it("exports a server span and a client span per backend attempt, linked, with traceparent forwarded", async () => {
    const gw = await start("    sample_ratio: 1");
    const response = await read(gw, { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`, "X-Consumer": "alice" });
    expect(response.status).toBe(200);
    await response.body?.cancel();

    const spans = await spansOfTrace(TRACE_ID, 3);
    const server = spans.find((s) => s.kind === SERVER);
    expect(server).toBeDefined();
    if (!server) return;
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.name).toBe("POST /v1/read");
    expect(server.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/read",
      "http.response.status_code": 200,
      "gateway.service_type": "ocr",
      "gateway.model": "reader",
      "gateway.consumer": "alice",
      "gateway.mode": "sync",
    });
    expect(server.resource["service.name"]).toBe("gateway-under-test");

    const clients = spans.filter((s) => s.kind === CLIENT).sort((a, b) => Number(a.attributes["gateway.attempt"]) - Number(b.attributes["gateway.attempt"]));
    expect(clients).toHaveLength(2);
    for (const client of clients) {
      expect(client.parentSpanId).toBe(server.spanId);
      expect(client.attributes["server.address"]).toBe("127.0.0.1");
    }
    expect(clients[0].attributes).toMatchObject({
      "gateway.attempt": 1,
      "gateway.outcome": "server_error",
      "http.response.status_code": 503,
      "server.port": failing.port,
    });
    expect(clients[0].status).toBe(2);
    expect(clients[1].attributes).toMatchObject({
      "gateway.attempt": 2,
      "gateway.outcome": "success",
      "http.response.status_code": 200,
      "server.port": echo.port,
      "http.request.resend_count": 1,
    });

    // Each backend joined the trace as a child of its own attempt's span.
    expect(traceparentOf(failing)).toEqual(["00", TRACE_ID, clients[0].spanId, "01"]);
    expect(traceparentOf(echo)).toEqual(["00", TRACE_ID, clients[1].spanId, "01"]);
    expect(receiver.exports[0]["x-collector-token"]).toBe("s3cret");
  });

  it("starts a new trace without a caller traceparent and names {model} routes by their template", async () => {
    const gw = await start("    sample_ratio: 1");
    const response = await read(gw, {}, "/v2/models/reader/infer");
    expect(response.status).toBe(200);
    await response.body?.cancel();
    const [, traceId] = traceparentOf(echo);
    const spans = await spansOfTrace(traceId, 3);
    const server = spans.find((s) => s.kind === SERVER);
    expect(server?.parentSpanId).toBeUndefined();
    expect(server?.attributes["http.route"]).toBe("/v2/models/{model}/infer");
    expect(server?.name).toBe("POST /v2/models/{model}/infer");
  });

  it("leaves out the default ignored paths, and a set ignore_paths replaces the default list", async () => {
    const defaults = await start("    sample_ratio: 1");
    for (const path of ["/health", "/metrics", "/docs", "/openapi.yaml"]) await (await fetch(`${defaults.url}${path}`)).arrayBuffer();
    const marker = await read(defaults, { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` });
    await marker.body?.cancel();
    await spansOfTrace(TRACE_ID, 3);
    // Spans are exported in the order they end, so the ignored requests' would be here by now.
    expect(receiver.spans.map((s) => s.attributes["url.path"]).filter(Boolean)).toEqual(["/v1/read"]);
    await defaults.kill();
    receiver.spans.length = 0;
    echo.reset();

    const custom = await start("    sample_ratio: 1\n    ignore_paths: [/v1/quiet]");
    const quiet = await read(custom, {}, "/v1/quiet");
    expect(quiet.status).toBe(200);
    await quiet.body?.cancel();
    // An ignored request's backend calls are not traced either.
    expect(echo.requests[0].headers.traceparent).toBeUndefined();
    await (await fetch(`${custom.url}/health`)).arrayBuffer();
    await waitUntil(() => receiver.spans.some((s) => s.attributes["url.path"] === "/health"), 15_000);
    expect(receiver.spans.find((s) => s.attributes["url.path"] === "/health")?.name).toBe("GET /health");
    expect(receiver.spans.some((s) => s.attributes["url.path"] === "/v1/quiet")).toBe(false);
  });

  it("samples nothing at sample_ratio 0 but follows a caller's sampled traceparent", async () => {
    const gw = await start("    sample_ratio: 0");
    const unsampled = await read(gw, {}, "/v1/quiet");
    expect(unsampled.status).toBe(200);
    await unsampled.body?.cancel();
    // The backend still gets a traceparent, flagged not sampled.
    const [, unsampledTrace, , flags] = traceparentOf(echo);
    expect(flags).toBe("00");

    const followed = await read(gw, { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` });
    await followed.body?.cancel();
    const spans = await spansOfTrace(TRACE_ID, 3);
    expect(spans.find((s) => s.kind === SERVER)?.parentSpanId).toBe(CALLER_SPAN);
    expect(receiver.spans.some((s) => s.traceId === unsampledTrace)).toBe(false);
    expect(receiver.spans.every((s) => s.traceId === TRACE_ID)).toBe(true);
  });

  it("follows hot reloads: a new sample ratio, tracing turned off, and on again", async () => {
    const gw = await start("    sample_ratio: 0");
    const reload = async (traces: string, enabled = true) => {
      gw.writeConfig(config(traces).replace("  enabled: true", `  enabled: ${enabled}`));
      expect((await fetch(`${gw.url}/-/reload`, { method: "POST" })).status).toBe(200);
      echo.reset();
    };
    const quietTrace = async (): Promise<string | undefined> => {
      const response = await read(gw, {}, "/v1/quiet");
      expect(response.status).toBe(200);
      await response.body?.cancel();
      const header = echo.requests.at(-1)?.headers.traceparent;
      return typeof header === "string" ? header.split("-")[1] : undefined;
    };

    await reload("    sample_ratio: 1");
    const sampled = await quietTrace();
    expect(sampled).toBeDefined();
    await spansOfTrace(sampled ?? "", 2);

    await reload("    sample_ratio: 1", false);
    expect(await quietTrace()).toBeUndefined();

    // The SDK was shut down with the last runtime that used it; this one starts it again.
    await reload("    sample_ratio: 1");
    const again = await quietTrace();
    const spans = await spansOfTrace(again ?? "", 2);
    expect(spans.find((s) => s.kind === SERVER)?.attributes["gateway.model"]).toBe("quiet");
  });

  it("pushes the gateway's metrics as OTLP every metrics.interval when metrics.enabled", async () => {
    const gw = await startGateway(config("    enabled: false", "  metrics: { enabled: true, interval: 1s }"));
    running.push(gw);
    const response = await read(gw, {}, "/v1/quiet");
    expect(response.status).toBe(200);
    await response.body?.cancel();

    const requestsOk = () =>
      receiver.metrics
        .flatMap((body) => body.resourceMetrics.flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics)))
        .filter((m) => m.name === "svc_gateway_requests_total")
        .flatMap((m) => m.sum?.dataPoints ?? [])
        .find((p) => flatten(p.attributes).status === "200" && flatten(p.attributes).mode === "sync");
    await waitUntil(() => requestsOk() !== undefined, 15_000, () => JSON.stringify(receiver.metrics).slice(0, 2000));
    expect(requestsOk()?.asDouble).toBeGreaterThanOrEqual(1);
    expect(flatten(receiver.metrics[0].resourceMetrics[0].resource.attributes)["service.name"]).toBe("gateway-under-test");
    expect(receiver.exports.at(-1)?.["x-collector-token"]).toBe("s3cret");
    // Tracing is off: no spans, no traceparent for the backend.
    expect(receiver.spans).toEqual([]);
    expect(echo.requests[0].headers.traceparent).toBeUndefined();
  });

  it("never fails a request when the collector is down", async () => {
    // A short export timeout: the exporter retries a refused connection until it runs out.
    const env = { OTEL_BSP_SCHEDULE_DELAY: "100", OTEL_EXPORTER_OTLP_TIMEOUT: "1000" };
    const gw = await startGateway(config("    sample_ratio: 1").replace(receiver.url, "http://127.0.0.1:9"), { env });
    running.push(gw);
    const response = await read(gw, { "X-Consumer": "bob" });
    expect(response.status).toBe(200);
    await response.body?.cancel();
    await waitUntil(() => gw.output().includes('"event":"otel_export_failed"'), 15_000, () => gw.output());
    expect((await read(gw)).status).toBe(200);
  });
});

describe("OpenTelemetry for jobs and logs", () => {
  const DB = 14;
  const jobsConfig = (serviceName: string) => `
server:
  consumer_header: X-Consumer
${storesYaml({ db: DB, bucket: "otel-e2e" })}
relay:
  embedded: false
opentelemetry:
  enabled: true
  service_name: ${serviceName}
  exporter:
    endpoint: ${receiver.url}
    headers: { x-collector-token: s3cret }
  logs:
    enabled: true
services:
  - type: ocr
    model: quiet
    inference_url: ${echo.url}
    operations: { read: [/v1/quiet] }
`;

  beforeAll(async () => {
    const redis = createClient({ url: inject("redisUrl"), database: DB });
    await redis.connect();
    await redis.flushDb();
    await redis.close();
  });

  it("runs a job in a separate relay inside the submitting request's trace, and exports both processes' logs with it", async () => {
    const env = { OTEL_BSP_SCHEDULE_DELAY: "100" };
    const gw = await startGateway(jobsConfig("gateway-under-test"), { env });
    running.push(gw);
    const relay = await startGateway(jobsConfig("relay-under-test"), { env, role: "relay" });
    running.push(relay);

    const body = new FormData();
    body.append("model", "quiet");
    body.append("file", new Blob(["page"]), "page.png");
    const submitted = await fetch(`${gw.url}/jobs/ocr`, {
      method: "POST",
      body,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`, "X-Consumer": "alice" },
    });
    expect(submitted.status).toBe(202);
    const { job_id: jobId } = (await submitted.json()) as { job_id: string };
    let view: Record<string, unknown> = {};
    await waitUntil(
      async () => {
        view = (await (await fetch(`${gw.url}/jobs/ocr/${jobId}`, { headers: { "X-Consumer": "alice" } })).json()) as Record<string, unknown>;
        return view.status === "completed";
      },
      15_000,
      () => `${JSON.stringify(view)}\nrelay:\n${relay.output()}`,
    );
    // The stored trace context is not part of the job's API view.
    expect(view).not.toHaveProperty("traceparent");

    const spans = await spansOfTrace(TRACE_ID, 3);
    const submit = spans.find((s) => s.kind === SERVER);
    const job = spans.find((s) => s.kind === CONSUMER);
    const call = spans.find((s) => s.kind === CLIENT);
    expect(submit).toMatchObject({ name: "POST /jobs/{type}", parentSpanId: CALLER_SPAN });
    expect(submit?.resource["service.name"]).toBe("gateway-under-test");
    expect(job).toMatchObject({ name: "relay job", parentSpanId: submit?.spanId, status: 0 });
    expect(job?.resource["service.name"]).toBe("relay-under-test");
    expect(job?.attributes).toMatchObject({
      "gateway.job_id": jobId,
      "gateway.service_type": "ocr",
      "gateway.model": "quiet",
      "gateway.consumer": "alice",
      "gateway.operation": "read",
      "gateway.outcome": "completed",
    });
    expect(call).toMatchObject({ parentSpanId: job?.spanId });
    expect(call?.attributes).toMatchObject({ "server.port": echo.port, "gateway.outcome": "success" });
    // The backend joined the trace as a child of the relay's client span.
    expect(traceparentOf(echo)).toEqual(["00", TRACE_ID, call?.spanId, "01"]);

    // The relay's log line about the job carries the job span's trace context.
    await waitUntil(() => receiver.logs.some((r) => r.eventName === "relay_job_finished"), 15_000, () => JSON.stringify(receiver.logs).slice(0, 3000));
    const finished = receiver.logs.find((r) => r.eventName === "relay_job_finished");
    expect(finished).toMatchObject({ traceId: TRACE_ID, spanId: job?.spanId, severityText: "INFO", severityNumber: 9, body: "relay_job_finished" });
    expect(finished?.attributes).toMatchObject({ job_id: jobId, status: "completed", role: "relay", plugin: "relay" });
    expect(finished?.resource["service.name"]).toBe("relay-under-test");
    // The gateway exports its own lines too (its start-up, outside any trace).
    await waitUntil(() => receiver.logs.some((r) => r.resource["service.name"] === "gateway-under-test"), 15_000);
    expect(receiver.exports.every((headers) => headers["x-collector-token"] === "s3cret")).toBe(true);
  });
});
