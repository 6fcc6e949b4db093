/** The `opentelemetry:` section: OTLP/HTTP export of traces, metrics and logs. */
import { type Static, Type } from "@sinclair/typebox";
import { Duration, Section, StringMap } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const OpenTelemetrySchema = Section(
  {
    enabled: Type.Boolean({ default: false, description: "OpenTelemetry export on or off" }),
    service_name: Type.String({ default: "svc/gateway", description: "Service name reported" }),
    exporter: Section(
      {
        endpoint: Type.String({
          default: "",
          description: "OTLP/HTTP collector address: a base URL (http://collector:4318) or a bare host:port; empty = localhost:4318",
        }),
        insecure: Type.Boolean({ default: false, description: "For a bare host:port endpoint: http (true) instead of https (false)" }),
        headers: StringMap("Headers sent to the collector"),
      },
      "OTLP/HTTP exporter",
    ),
    traces: Section(
      {
        enabled: Type.Boolean({ default: true, description: "Export traces (when opentelemetry.enabled)" }),
        sample_ratio: Type.Number({ minimum: 0, maximum: 1, default: 1, description: "Fraction of requests traced" }),
        ignore_paths: Type.Array(Type.String(), {
          default: ["/health", "/metrics", "/docs", "/openapi.yaml"],
          description: "Paths never traced; a set value replaces the whole list",
        }),
      },
      "Traces",
    ),
    metrics: Section(
      { enabled: Type.Boolean({ default: false, description: "Export metrics over OTLP" }), interval: Duration("60s", "Export interval") },
      "Metrics export",
    ),
    logs: Section({ enabled: Type.Boolean({ default: false, description: "Export logs over OTLP" }) }, "Logs export"),
  },
  "OpenTelemetry export",
);

export type OpenTelemetryConfig = Static<typeof OpenTelemetrySchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    opentelemetry: OpenTelemetryConfig;
  }
}

export const openTelemetrySection: ConfigSection<typeof OpenTelemetrySchema> = { key: "opentelemetry", schema: OpenTelemetrySchema };
