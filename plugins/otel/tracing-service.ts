/**
 * The `tracing` service, for work that outlives the request that asked for it (a relay
 * running a job): the submitting side stores `traceparent()` with the work, the side
 * doing it later runs it in `continueTrace(...)`: a span in that trace, child of the span
 * that handed the work over, so the job's backend calls show up in the submitting
 * request's trace. Only provided when tracing is on; users check `api.has("tracing")`.
 */
import { api as otel } from "@opentelemetry/sdk-node";
import type { Tracer } from "./sdk.ts";

export type SpanAttributes = Record<string, string | number | boolean>;

export interface Tracing {
  /** The W3C traceparent of the span active now; undefined outside a recorded span. */
  traceparent(): string | undefined;
  /**
   * Runs `fn` inside a new span continuing the trace `traceparent` names (a new trace
   * when it is missing or invalid); spans started in `fn` (backend calls) are its children.
   */
  continueTrace<T>(name: string, traceparent: string | undefined, attributes: SpanAttributes, fn: () => Promise<T>): Promise<T>;
}

declare module "../../core/plugins/types.ts" {
  interface GatewayServices {
    tracing: Tracing;
  }
}

const carrierGetter: otel.TextMapGetter<Record<string, string>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

export function tracingService(tracer: Tracer, propagator: otel.TextMapPropagator): Tracing {
  return {
    traceparent() {
      const span = otel.trace.getActiveSpan();
      if (!span?.isRecording()) return undefined;
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
        return await fn();
      }
      try {
        return await otel.context.with(otel.trace.setSpan(parent, span), fn);
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
