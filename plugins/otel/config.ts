/** The `opentelemetry:` section: OTLP/HTTP export of traces, metrics and logs. */
import { Type, type Static } from "@sinclair/typebox";
import { Duration, Section, StringMap } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const OpenTelemetrySchema = Section(
  {
    enabled: Type.Boolean({ default: false }),
    service_name: Type.String({ default: "svc/gateway" }),
    exporter: Section(
      {
        endpoint: Type.String({ default: "" }),
        insecure: Type.Boolean({ default: false }),
        headers: StringMap("Exporter headers"),
      },
      "OTLP/HTTP exporter",
    ),
    traces: Section(
      {
        enabled: Type.Boolean({ default: true }),
        sample_ratio: Type.Number({ minimum: 0, maximum: 1, default: 1 }),
        ignore_paths: Type.Array(Type.String(), { default: ["/health", "/metrics", "/docs", "/openapi.yaml"] }),
      },
      "Traces",
    ),
    metrics: Section({ enabled: Type.Boolean({ default: false }), interval: Duration("60s", "Export interval") }, "Metrics export"),
    logs: Section({ enabled: Type.Boolean({ default: false }) }, "Logs export"),
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
