/**
 * One runtime's tracing settings as SDK parts: the sampler (`traces.sample_ratio` for new
 * traces; a caller's sampled `traceparent` is followed) and a batch processor exporting
 * OTLP/HTTP JSON to `exporter.endpoint` with `exporter.headers`. Export failures are
 * logged (at most once a minute) and otherwise ignored: telemetry never fails a request.
 */
import { core, node } from "@opentelemetry/sdk-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import type { GatewayConfig } from "../../core/config/schema.ts";
import type { Logger } from "../../core/log.ts";
import { signalUrl } from "./endpoint.ts";
import type { RuntimeTelemetry } from "./sdk.ts";

const REPORT_EVERY_MS = 60_000;

/** Wraps an exporter so a failing collector shows in the gateway log instead of nowhere. */
function reporting(exporter: node.SpanExporter, url: string, log: Logger, now: () => number): node.SpanExporter {
  let lastReport = Number.NEGATIVE_INFINITY;
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== core.ExportResultCode.SUCCESS && now() - lastReport >= REPORT_EVERY_MS) {
          lastReport = now();
          log.warn("otel_export_failed", { url, spans: spans.length, error: result.error, message: "spans were dropped; requests are unaffected" });
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

export function runtimeTelemetry(settings: GatewayConfig["opentelemetry"], log: Logger, now: () => number): RuntimeTelemetry {
  const url = signalUrl(settings.exporter, "traces");
  const exporter = new OTLPTraceExporter({ url, headers: { ...settings.exporter.headers } });
  return {
    sampler: new node.ParentBasedSampler({ root: new node.TraceIdRatioBasedSampler(settings.traces.sample_ratio) }),
    processor: new node.BatchSpanProcessor(reporting(exporter, url, log, now)),
  };
}
