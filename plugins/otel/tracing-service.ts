/** The `tracing` service (its contract is core/telemetry/tracing.ts) on the OpenTelemetry SDK. */
import { api as otel } from "@opentelemetry/sdk-node";
import type { Tracing, WorkSpan } from "../../core/telemetry/tracing.ts";
import type { Tracer } from "./sdk.ts";

const carrierGetter: otel.TextMapGetter<Record<string, string>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** For work that runs untraced because the tracer failed. */
const untracedWork: WorkSpan = { setAttributes: () => {}, fail: () => {} };

export function tracingService(tracer: Tracer, propagator: otel.TextMapPropagator): Tracing {
  return {
    traceparent() {
      const span = otel.trace.getActiveSpan();
      if (!span || !otel.isSpanContextValid(span.spanContext())) return undefined;
      const carrier: Record<string, string> = {};
      propagator.inject(otel.context.active(), carrier, { set: (c, k, v) => (c[k] = v) });
      return carrier.traceparent;
    },
    async continueTrace(name, traceparent, attributes, fn) {
      let span: otel.Span;
      let parent: otel.Context;
      try {
        // Extracting from an absent or malformed header leaves the root context: a new trace.
        parent = traceparent ? propagator.extract(otel.ROOT_CONTEXT, { traceparent }, carrierGetter) : otel.ROOT_CONTEXT;
        span = tracer.startSpan(name, { kind: otel.SpanKind.CONSUMER, attributes }, parent);
      } catch {
        return await fn(untracedWork);
      }
      const work: WorkSpan = {
        setAttributes: (attributes) => span.setAttributes(attributes),
        fail: (message) => span.setStatus({ code: otel.SpanStatusCode.ERROR, message }),
      };
      try {
        return await otel.context.with(otel.trace.setSpan(parent, span), () => fn(work));
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: otel.SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  };
}
