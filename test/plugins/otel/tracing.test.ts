/**
 * The OpenTelemetry plugin's parts without a gateway process: the exporter address rule,
 * ignored paths, and the `tracing` service that lets work done later (a relay job) join
 * the trace of the request that submitted it, exported to a local OTLP receiver.
 */
import { api as otel } from "@opentelemetry/sdk-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../plugins/config.ts";
import { silentLogger } from "../../../core/log.ts";
import { signalUrl } from "../../../plugins/otel/endpoint.ts";
import { ignoredPaths } from "../../../plugins/otel/ignore.ts";
import { acquire } from "../../../plugins/otel/sdk.ts";
import { runtimeTelemetry } from "../../../plugins/otel/telemetry.ts";
import { tracingService } from "../../../plugins/otel/tracing-service.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../../fixtures/otlp-receiver.ts";

const exporter = (endpoint: string, insecure = false) => ({ endpoint, insecure, headers: {} });

const tracesUrl = (e: ReturnType<typeof exporter>) => signalUrl(e, "traces");

describe("exporter address", () => {
  it("takes a base URL or a bare host:port and appends the signal's path once", () => {
    expect(tracesUrl(exporter("http://collector:4318"))).toBe("http://collector:4318/v1/traces");
    expect(tracesUrl(exporter("https://otel.example.com/prefix/"))).toBe("https://otel.example.com/prefix/v1/traces");
    expect(tracesUrl(exporter("http://collector:4318/v1/traces"))).toBe("http://collector:4318/v1/traces");
    expect(tracesUrl(exporter("collector:4318"))).toBe("https://collector:4318/v1/traces");
    expect(tracesUrl(exporter("collector:4318", true))).toBe("http://collector:4318/v1/traces");
    expect(tracesUrl(exporter("", true))).toBe("http://localhost:4318/v1/traces");
    expect(signalUrl(exporter("http://collector:4318/v1/traces"), "metrics")).toBe("http://collector:4318/v1/metrics");
  });
});

describe("ignored paths", () => {
  it("matches a path and what lies under it, nothing else", () => {
    const ignored = ignoredPaths(["/health", "/docs/", "/metrics"]);
    expect(ignored("/health")).toBe(true);
    expect(ignored("/docs")).toBe(true);
    expect(ignored("/docs/assets/swagger-ui.css")).toBe(true);
    expect(ignored("/healthz")).toBe(false);
    expect(ignored("/v1/chat/completions")).toBe(false);
    expect(ignoredPaths([])("/health")).toBe(false);
  });
});

describe("tracing service", () => {
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    receiver = await startOtlpReceiver();
  });
  afterAll(async () => {
    await receiver.close();
  });

  it("continues the submitting request's trace for work done later", async () => {
    const { config } = loadConfig(`opentelemetry: { enabled: true, exporter: { endpoint: ${JSON.stringify(receiver.url)} } }\n`, {});
    const sdk = await acquire("unit-test", runtimeTelemetry(config.opentelemetry, silentLogger, Date.now));
    const tracing = tracingService(sdk.tracer, sdk.propagator);

    const submit = sdk.tracer.startSpan("POST /jobs/{type}", { kind: otel.SpanKind.SERVER });
    const handedOver = otel.context.with(otel.trace.setSpan(otel.ROOT_CONTEXT, submit), () => tracing.traceparent());
    submit.end();
    expect(handedOver).toMatch(new RegExp(`^00-${submit.spanContext().traceId}-${submit.spanContext().spanId}-01$`));
    expect(tracing.traceparent()).toBeUndefined();

    const result = await tracing.continueTrace("relay job", handedOver, { "gateway.job_id": "job-1" }, async (span) => {
      sdk.tracer.startSpan("POST", { kind: otel.SpanKind.CLIENT }).end();
      span.setAttributes({ "gateway.outcome": "failed" });
      span.fail("the backend answered HTTP 500");
      return 42;
    });
    expect(result).toBe(42);
    await tracing.continueTrace("relay job", "not-a-traceparent", {}, async () => {});
    await expect(tracing.continueTrace("relay job", undefined, {}, async () => Promise.reject(new Error("backend down")))).rejects.toThrow("backend down");

    // Leaving the SDK flushes what is batched.
    await sdk.release();
    const [job, fresh, failed] = receiver.spans.filter((s) => s.name === "relay job");
    expect(job.traceId).toBe(submit.spanContext().traceId);
    expect(job.parentSpanId).toBe(submit.spanContext().spanId);
    expect(job.kind).toBe(5);
    expect(job.attributes).toMatchObject({ "gateway.job_id": "job-1", "gateway.outcome": "failed" });
    expect(job.status).toBe(2);
    expect(receiver.spans.find((s) => s.name === "POST")?.parentSpanId).toBe(job.spanId);
    expect(fresh.traceId).not.toBe(submit.spanContext().traceId);
    expect(fresh.parentSpanId).toBeUndefined();
    expect(failed.status).toBe(2);
  });

  it("hands an unsampled request's decision on, so the later work is not recorded either", async () => {
    receiver.spans.length = 0;
    const { config } = loadConfig(`opentelemetry: { enabled: true, exporter: { endpoint: ${JSON.stringify(receiver.url)} } }\n`, {});
    const sdk = await acquire("unit-test", runtimeTelemetry(config.opentelemetry, silentLogger, Date.now));
    const tracing = tracingService(sdk.tracer, sdk.propagator);
    const caller = sdk.propagator.extract(
      otel.ROOT_CONTEXT,
      { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" },
      otel.defaultTextMapGetter,
    );
    const request = sdk.tracer.startSpan("POST /jobs/{type}", { kind: otel.SpanKind.SERVER }, caller);
    const handedOver = otel.context.with(otel.trace.setSpan(caller, request), () => tracing.traceparent());
    request.end();
    expect(handedOver).toMatch(/^00-4bf92f3577b34da6a3ce929d0e0e4736-[0-9a-f]{16}-00$/);
    await tracing.continueTrace("relay job", handedOver, {}, async () => {
      sdk.tracer.startSpan("POST", { kind: otel.SpanKind.CLIENT }).end();
    });
    await sdk.release();
    expect(receiver.spans).toEqual([]);
  });
});
