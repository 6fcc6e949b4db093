/**
 * OpenTelemetry export (docs/design.md#observability), on when
 * `opentelemetry.enabled`: traces (a server span per request, a client span per backend
 * attempt with `traceparent` propagated, a span per relay job in the submitting request's
 * trace), with `metrics.enabled` the Prometheus series, and with `logs.enabled` the log
 * lines, all over OTLP/HTTP to `exporter.endpoint`. It also runs in relay processes, where
 * jobs get their spans. Telemetry never changes a request: any failure of its own is
 * logged and the request goes on untraced.
 *
 * The SDK parts are imported here, on demand: a gateway with OpenTelemetry off never
 * loads the SDK (tens of MB of memory).
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { openTelemetrySection } from "./config.ts";
import { exportMetrics } from "./metrics-export.ts";
import type { Untraced } from "./tracing.ts";

const asIs: Untraced = (fn) => fn();

/** What this runtime exports over OTLP (the `telemetry` service, there while the plugin is on): other plugins ask it instead of reading `opentelemetry`. */
export interface TelemetryExport {
  readonly traces: boolean;
  /** The Prometheus series are exported too: a metric meant for OpenTelemetry (the GenAI token usage) is worth keeping. */
  readonly metrics: boolean;
  readonly logs: boolean;
}

declare module "../../core/plugins/types.ts" {
  interface GatewayServices {
    telemetry: TelemetryExport;
  }
}

// Loaders at the top level: tsc (5.9) leaves the `.ts` extension of an `import()` nested in
// the plugin object unrewritten, and the built gateway would then fail to find the module.
const loadLogsExport = () => import("./logs-export.ts");
const loadTracing = () => import("./tracing.ts");

export default definePlugin({
  name: "otel",
  // First of all: its middleware is the outermost (every request is traced, the audit line
  // included), its fetch wrapper sees every plugin's outbound call and its log export the
  // lines the others write as they set up.
  layer: "telemetry",
  section: openTelemetrySection,
  roles: ["gateway", "relay"],
  enabled: (config) => config.opentelemetry.enabled,
  async setup(api) {
    const settings = api.config.opentelemetry;
    api.provide("telemetry", { traces: settings.traces.enabled, metrics: settings.metrics.enabled, logs: settings.logs.enabled });
    // Logs first, so the lines the other signals log at start are exported too.
    if (settings.logs.enabled) {
      const { exportLogs } = await loadLogsExport();
      exportLogs(api);
    }
    let untraced = asIs;
    if (settings.traces.enabled) {
      const { startTracing } = await loadTracing();
      untraced = await startTracing(api);
    }
    if (settings.metrics.enabled) exportMetrics(api, untraced);
  },
});
