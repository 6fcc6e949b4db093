/**
 * One runtime's tracing settings as SDK parts: the sampler (`traces.sample_ratio` for new
 * traces; a caller's `traceparent` decision is followed) and a batch processor exporting
 * OTLP/HTTP JSON to `exporter.endpoint` with `exporter.headers`. Export failures are
 * logged (at most once a minute) and otherwise ignored: telemetry never fails a request.
 */
import { node } from "@opentelemetry/sdk-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import type { GatewayConfig } from "../../core/config/schema.ts";
import type { Logger } from "../../core/log.ts";
import { signalUrl } from "./endpoint.ts";
import { reporting } from "./export-report.ts";
import type { RuntimeTelemetry } from "./sdk.ts";

export function runtimeTelemetry(settings: GatewayConfig["opentelemetry"], log: Logger, now: () => number): RuntimeTelemetry {
  const url = signalUrl(settings.exporter, "traces");
  const exporter = new OTLPTraceExporter({ url, headers: { ...settings.exporter.headers } });
  return {
    sampler: new node.ParentBasedSampler({ root: new node.TraceIdRatioBasedSampler(settings.traces.sample_ratio) }),
    processor: new node.BatchSpanProcessor(reporting(exporter, { url, log, now, event: "otel_export_failed", items: "spans" })),
  };
}
