/**
 * `opentelemetry.logs`: the gateway's log lines as OTLP log records, exported by the otel
 * plugin of an in-process runtime to a local OTLP receiver. Closing the runtime flushes
 * what is batched, so the test needs no waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, type Logger } from "../../../core/log.ts";
import type { Runtime } from "../../../core/plugins/host.ts";
import { definePlugin } from "../../../core/plugins/types.ts";
import { toLogRecord } from "../../../plugins/otel/logs-export.ts";
import otel from "../../../plugins/otel/index.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../fixtures/otlp-receiver.ts";
import { startTestRuntime } from "../../support/runtime.ts";

/** A route that logs inside the request (hence inside its server span when tracing is on). */
const probe = definePlugin({
  name: "log-probe",
  setup(api) {
    api.routes.post("/probe", (c) => {
      api.log.warn("probe_logged", { message: "something to look at", count: 2, detail: { reason: "test" } });
      return c.json({ ok: true });
    });
  },
});

interface Started {
  runtime: Runtime;
  lines: Array<Record<string, unknown>>;
}

async function start(yaml: string, shared?: Logger): Promise<Started> {
  const lines: Array<Record<string, unknown>> = [];
  const log = shared ?? createLogger({ write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>), base: { role: "gateway" } });
  const { runtime } = await startTestRuntime(yaml, [otel, probe], { log });
  return { runtime, lines };
}

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

describe("log records", () => {
  it("carry the level as severity, the message (else the event) as body and the other fields as attributes", () => {
    const record = toLogRecord({
      time: 1_700_000_000_000,
      level: "warn",
      event: "relay_job_lost",
      fields: { role: "relay", message: "dropped", job_id: "j1", error: { name: "Error", message: "x" } },
    });
    expect(record).toEqual({
      timestamp: 1_700_000_000_000,
      severityNumber: 13,
      severityText: "WARN",
      eventName: "relay_job_lost",
      body: "dropped",
      attributes: { event: "relay_job_lost", role: "relay", job_id: "j1", error: { name: "Error", message: "x" } },
    });
    const plain = toLogRecord({ time: 1, level: "error", event: "otel_tracing_failed", fields: { message: { not: "text" } } });
    expect(plain).toMatchObject({ severityNumber: 17, body: "otel_tracing_failed", attributes: { event: "otel_tracing_failed", message: { not: "text" } } });
    expect(toLogRecord({ time: 1, level: "debug", event: "d", fields: {} }).severityNumber).toBe(5);
    expect(toLogRecord({ time: 1, level: "info", event: "i", fields: {} }).severityNumber).toBe(9);
  });
});

describe("OTLP logs export", () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  const config = (endpoint: string, traces = true) => `
opentelemetry:
  enabled: true
  service_name: logs-under-test
  exporter: { endpoint: ${JSON.stringify(endpoint)}, headers: { x-collector-token: s3cret } }
  traces: { enabled: ${traces} }
  logs: { enabled: true }
`;

  it("sends every log line as a record, with the trace and span of the request that logged it", async () => {
    receiver.logs.length = 0;
    receiver.spans.length = 0;
    const { runtime } = await start(config(receiver.url));
    const response = await runtime.handle(
      new Request("http://gateway/probe", { method: "POST", headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` } }),
    );
    expect(response.status).toBe(200);
    await runtime.close();

    const logged = receiver.logs.find((r) => r.eventName === "probe_logged");
    expect(logged).toBeDefined();
    if (!logged) return;
    expect(logged).toMatchObject({ severityNumber: 13, severityText: "WARN", body: "something to look at", traceId: TRACE_ID });
    expect(logged.attributes).toMatchObject({ event: "probe_logged", count: 2, role: "gateway", plugin: "log-probe" });
    expect(logged.resource["service.name"]).toBe("logs-under-test");
    // The record points at the request's server span.
    const server = receiver.spans.find((s) => s.traceId === TRACE_ID);
    expect(server?.parentSpanId).toBe(CALLER_SPAN);
    expect(logged.spanId).toBe(server?.spanId);
    // Lines logged outside any request have no trace.
    const startup = receiver.logs.find((r) => r.eventName === "otel_tracing");
    expect(startup).toMatchObject({ traceId: "", severityText: "INFO" });
    expect(receiver.exports.some((headers) => headers["x-collector-token"] === "s3cret")).toBe(true);
  });

  it("exports logs without traces", async () => {
    receiver.logs.length = 0;
    const { runtime } = await start(config(receiver.url, false));
    expect((await runtime.handle(new Request("http://gateway/probe", { method: "POST" }))).status).toBe(200);
    await runtime.close();
    expect(receiver.logs.find((r) => r.eventName === "probe_logged")).toMatchObject({ traceId: "", body: "something to look at" });
  });

  it("exports a line once while a reload runs the old and the new runtime side by side", async () => {
    receiver.logs.length = 0;
    const log = createLogger({ write: () => {} });
    const old = await start(config(receiver.url, false), log);
    const next = await start(config(receiver.url, false), log);
    log.info("during_reload");
    await old.runtime.close();
    log.info("after_reload");
    await next.runtime.close();
    expect(receiver.logs.filter((r) => r.eventName === "during_reload")).toHaveLength(1);
    expect(receiver.logs.filter((r) => r.eventName === "after_reload")).toHaveLength(1);
  });

  it("never fails a request when the collector is down, and says so in the log", async () => {
    const timeout = process.env.OTEL_EXPORTER_OTLP_TIMEOUT;
    // A short export timeout: the exporter retries a refused connection until it runs out.
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = "1000";
    try {
      const { runtime, lines } = await start(config("http://127.0.0.1:9", false));
      expect((await runtime.handle(new Request("http://gateway/probe", { method: "POST" }))).status).toBe(200);
      await runtime.close();
      expect(lines.find((line) => line.event === "otel_logs_export_failed")).toMatchObject({ level: "warn", url: "http://127.0.0.1:9/v1/logs" });
    } finally {
      if (timeout === undefined) delete process.env.OTEL_EXPORTER_OTLP_TIMEOUT;
      else process.env.OTEL_EXPORTER_OTLP_TIMEOUT = timeout;
    }
  });
});
