/**
 * `opentelemetry.metrics`: every `metrics.interval`, the gateway's Prometheus series are
 * pushed to the collector as OTLP/HTTP JSON (`<endpoint>/v1/metrics`, with the exporter
 * headers), and once more when the runtime closes. The push itself is not traced, and a
 * failed push is logged at most once a minute; the next one carries the cumulative values.
 */
import { durationMs } from "../../core/config/duration.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import { signalUrl } from "./endpoint.ts";
import { otlpMetrics, type PromMetric } from "./metrics-otlp.ts";
import type { Untraced } from "./tracing.ts";

type RegistryJson = Awaited<ReturnType<PluginApi<unknown>["metrics"]["registry"]["getMetricsAsJSON"]>>;

/** prom-client types `type` as an enum and leaves `metricName` (histogram samples) untyped; at runtime both are strings. */
function fromRegistry(metrics: RegistryJson): PromMetric[] {
  return metrics.map((metric) => ({
    name: metric.name,
    help: metric.help,
    type: String(metric.type),
    values: metric.values.map((sample) => {
      const name = (sample as { metricName?: unknown }).metricName;
      return { value: sample.value, labels: sample.labels, ...(typeof name === "string" ? { metricName: name } : {}) };
    }),
  }));
}

const PUSH_TIMEOUT_MS = 10_000;
const REPORT_EVERY_MS = 60_000;
/** Prometheus counters count from process start; so do the exported sums. */
const PROCESS_STARTED = Date.now();

/** `untraced` keeps the push out of the traces when this runtime traces its outbound calls. */
export function exportMetrics(api: PluginApi<unknown>, untraced: Untraced): void {
  const settings = api.config.opentelemetry;
  const url = signalUrl(settings.exporter, "metrics");
  let lastReport = Number.NEGATIVE_INFINITY;

  const push = async (signal?: AbortSignal): Promise<void> => {
    try {
      const body = otlpMetrics(
        fromRegistry(await api.metrics.registry.getMetricsAsJSON()),
        { "service.name": settings.service_name },
        PROCESS_STARTED,
        api.clock.now(),
      );
      const timeout = AbortSignal.timeout(PUSH_TIMEOUT_MS);
      const response = await untraced(() =>
        api.fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...settings.exporter.headers },
          body: JSON.stringify(body),
          signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        })
      );
      await response.body?.cancel().catch(() => {});
      if (!response.ok) throw new Error(`the collector answered HTTP ${response.status}`);
    } catch (error) {
      if (api.clock.now() - lastReport < REPORT_EVERY_MS) return;
      lastReport = api.clock.now();
      api.log.warn("otel_metrics_export_failed", { url, error, message: "the next push carries the cumulative values" });
    }
  };

  api.task({ name: "otel-metrics-export", everyMs: durationMs(settings.metrics.interval), run: (signal) => push(signal) });
  api.onClose(() => push());
}
