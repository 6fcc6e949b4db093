/**
 * Where telemetry goes. `exporter.endpoint` is the collector's OTLP/HTTP base address, as
 * in OTEL_EXPORTER_OTLP_ENDPOINT ("http://collector:4318"), or a bare "host:port" as the Go
 * SDK takes it, in which case `exporter.insecure` picks http (true) or https (false). The
 * signal's path (`/v1/traces`, `/v1/metrics`, `/v1/logs`) is appended unless the address names one.
 */
import type { GatewayConfig } from "../../core/config/schema.ts";

const DEFAULT_ENDPOINT = "localhost:4318";

export function signalUrl(exporter: GatewayConfig["opentelemetry"]["exporter"], signal: "traces" | "metrics" | "logs"): string {
  const configured = exporter.endpoint.trim() || DEFAULT_ENDPOINT;
  const base = /^[a-z][a-z0-9+.-]*:\/\//i.test(configured) ? configured : `${exporter.insecure ? "http" : "https"}://${configured}`;
  const url = new URL(base);
  // An address naming a signal path stands for the collector's base.
  const root = url.pathname.replace(/\/v1\/(traces|metrics|logs)\/?$/, "").replace(/\/+$/, "");
  url.pathname = `${root}/v1/${signal}`;
  return url.href;
}
