/**
 * Wraps an OTLP exporter (spans or log records) so a failing collector shows in the
 * gateway log, at most once a minute, instead of nowhere. The items are dropped either
 * way: telemetry never fails or delays a request.
 */
import { core } from "@opentelemetry/sdk-node";
import type { Logger } from "../../core/log.ts";

const REPORT_EVERY_MS = 60_000;

/** What the SDK's span and log record exporters have in common. */
export interface Exporter<T> {
  export(items: T[], done: (result: core.ExportResult) => void): void;
  shutdown(): Promise<void>;
  forceFlush?(): Promise<void>;
}

export interface ReportTarget {
  url: string;
  log: Logger;
  now(): number;
  /** Log event and the name of what was dropped ("spans", "log_records"). */
  event: string;
  items: string;
}

export function reporting<T>(exporter: Exporter<T>, target: ReportTarget): Exporter<T> & { forceFlush(): Promise<void> } {
  let lastReport = Number.NEGATIVE_INFINITY;
  return {
    export(items, done) {
      exporter.export(items, (result) => {
        if (result.code !== core.ExportResultCode.SUCCESS && target.now() - lastReport >= REPORT_EVERY_MS) {
          lastReport = target.now();
          target.log.warn(target.event, {
            url: target.url,
            [target.items]: items.length,
            error: result.error,
            message: `${target.items.replace("_", " ")} were dropped; requests are unaffected`,
          });
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}
