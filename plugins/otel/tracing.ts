/**
 * Traces for one runtime (`traces.enabled`): joins the process's SDK, puts a server span
 * around every request and a client span around every backend call, and provides the
 * `tracing` service. Loaded by a dynamic import from the plugin's setup, so a gateway
 * with OpenTelemetry off never loads the SDK.
 */
import { api as otel, core } from "@opentelemetry/sdk-node";
import type { PluginApi } from "../../core/plugins/types.ts";
import { clientSpans } from "./client-span.ts";
import { ignoredPaths } from "./ignore.ts";
import { acquire } from "./sdk.ts";
import { serverSpans } from "./server-span.ts";
import { runtimeTelemetry } from "./telemetry.ts";
import { tracingService } from "./tracing-service.ts";

/** Runs `fn` with no span recorded for what it does (the telemetry's own HTTP calls). */
export type Untraced = <T>(fn: () => Promise<T>) => Promise<T>;

/** A broken tracer is reported once per runtime, not once per request. */
function reportOnce(report: (error: unknown) => void): (error: unknown) => void {
  let reported = false;
  return (error) => {
    if (reported) return;
    reported = true;
    report(error);
  };
}

export async function startTracing(api: PluginApi): Promise<Untraced> {
  const settings = api.config.opentelemetry;
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
  return (fn) => otel.context.with(core.suppressTracing(otel.context.active()), fn);
}
