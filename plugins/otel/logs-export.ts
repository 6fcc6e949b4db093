/**
 * `opentelemetry.logs`: every line the gateway logs (the JSON lines on stdout) is also a
 * log record sent as OTLP/HTTP JSON to `<endpoint>/v1/logs` with the exporter headers.
 * A record has the line's level as severity, its `message` (else its event name) as body,
 * its other fields as attributes (plus `event`), and the trace and span ids of the span
 * active where it was logged (a request's server span, a relay job's span).
 *
 * Records are batched and sent in the background; a failing collector is logged at most
 * once a minute and the records are dropped. Logging never waits for the export.
 * During a hot reload the old and new runtimes both run: only the newest exports, so a
 * line is sent once.
 */
import { logs, resources } from "@opentelemetry/sdk-node";
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import type { LogEntry, LogLevel } from "../../core/log.ts";
import type { PluginApi } from "../../core/plugins/types.ts";
import { signalUrl } from "./endpoint.ts";
import { reporting } from "./export-report.ts";

type LogRecord = Parameters<ReturnType<logs.LoggerProvider["getLogger"]>["emit"]>[0];
type Attributes = NonNullable<LogRecord["attributes"]>;

/** OTLP severity numbers (DEBUG, INFO, WARN, ERROR). */
const SEVERITY: Record<LogLevel, NonNullable<LogRecord["severityNumber"]>> = { debug: 5, info: 9, warn: 13, error: 17 };

/** The runtimes exporting logs now, oldest first; the last one exports. */
const live: object[] = [];

export function toLogRecord(entry: LogEntry): LogRecord {
  const { message, ...rest } = entry.fields;
  const text = typeof message === "string" ? message : undefined;
  // The values as the JSON line shows them (nested objects stay maps).
  const attributes = JSON.parse(JSON.stringify({ event: entry.event, ...(text === undefined ? entry.fields : rest) })) as Attributes;
  return {
    timestamp: entry.time,
    severityNumber: SEVERITY[entry.level],
    severityText: entry.level.toUpperCase(),
    eventName: entry.event,
    body: text ?? entry.event,
    attributes,
  };
}

export function exportLogs(api: PluginApi): void {
  const settings = api.config.opentelemetry;
  const url = signalUrl(settings.exporter, "logs");
  const exporter = new OTLPLogExporter({ url, headers: { ...settings.exporter.headers } });
  const provider = new logs.LoggerProvider({
    // The resource the traces carry (NodeSDK's default detectors, OTEL_RESOURCE_ATTRIBUTES), so records and spans correlate.
    resource: resources
      .defaultResource()
      .merge(resources.detectResources({ detectors: [resources.envDetector, resources.processDetector, resources.hostDetector] }))
      .merge(resources.resourceFromAttributes({ "service.name": settings.service_name })),
    processors: [
      new logs.BatchLogRecordProcessor({
        exporter: reporting(exporter, { url, log: api.log, now: () => api.clock.now(), event: "otel_logs_export_failed", items: "log_records" }),
      }),
    ],
  });
  const logger = provider.getLogger("inference-gateway");
  const self = {};
  live.push(self);
  // Emitted synchronously, in the logging code's context: the active span gives the record its trace and span ids.
  const detach = api.log.tap((entry) => {
    if (live[live.length - 1] === self) logger.emit(toLogRecord(entry));
  });
  api.onClose(async () => {
    detach();
    live.splice(live.indexOf(self), 1);
    // Sends what is still batched.
    await provider.shutdown().catch(() => {});
  });
  api.log.info("otel_logs", { url });
}
