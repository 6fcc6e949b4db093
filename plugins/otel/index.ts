/**
 * OpenTelemetry export (spec 2.9 `opentelemetry`, DESIGN 5), on when
 * `opentelemetry.enabled`: traces (a server span per request, a client span per backend
 * attempt with `traceparent` propagated) and, with `metrics.enabled`, the Prometheus series,
 * both over OTLP/HTTP to `exporter.endpoint`. It also runs in relay processes, where the
 * backend calls of jobs get client spans. Telemetry never changes a request: any failure
 * of its own is logged and the request goes on untraced.
 */
import { definePlugin } from "../../core/plugins/types.ts";
import { clientSpans } from "./client-span.ts";
import { ignoredPaths } from "./ignore.ts";
import { exportMetrics } from "./metrics-export.ts";
import { acquire } from "./sdk.ts";
import { serverSpans } from "./server-span.ts";
import { runtimeTelemetry } from "./telemetry.ts";
import { tracingService } from "./tracing-service.ts";

/** A broken tracer is reported once per runtime, not once per request. */
function reportOnce(report: (error: unknown) => void): (error: unknown) => void {
  let reported = false;
  return (error) => {
    if (reported) return;
    reported = true;
    report(error);
  };
}

export default definePlugin({
  name: "otel",
  roles: ["gateway", "relay"],
  enabled: (config) => config.opentelemetry.enabled,
  async setup(api) {
    const settings = api.config.opentelemetry;
    if (settings.logs.enabled) {
      api.log.warn("otel_signal_unsupported", { key: "opentelemetry.logs.enabled", message: "OTLP logs export is not available yet; ship the JSON log lines (stdout) instead" });
    }
    if (settings.metrics.enabled) exportMetrics(api);
    if (!settings.traces.enabled) return;

    const sdk = await acquire(settings.service_name, runtimeTelemetry(settings, api.log, () => api.clock.now()));
    api.onClose(() => sdk.release());
    if (sdk.serviceName !== settings.service_name) {
      api.log.warn("otel_restart_needed", { key: "opentelemetry.service_name", running: sdk.serviceName, message: "the service name applies after a restart" });
    }
    const failed = reportOnce((error) => api.log.error("otel_tracing_failed", { error, message: "requests go on untraced" }));

    api.middleware(
      serverSpans({
        tracer: sdk.tracer,
        propagator: sdk.propagator,
        ignored: ignoredPaths(settings.traces.ignore_paths),
        registry: api.registry,
        contextOf: (request) => api.contextOf(request),
        failed,
      }),
    );
    api.wrapFetch(clientSpans({ tracer: sdk.tracer, propagator: sdk.propagator, failed }));
    api.provide("tracing", tracingService(sdk.tracer, sdk.propagator));
    api.log.info("otel_tracing", { service_name: sdk.serviceName, sample_ratio: settings.traces.sample_ratio, ignore_paths: settings.traces.ignore_paths });
  },
});
