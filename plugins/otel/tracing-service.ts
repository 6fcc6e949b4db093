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

/** The span `continueTrace` runs in, for what is only known at the end (an outcome). */
export interface WorkSpan {
  setAttributes(attributes: SpanAttributes): void;
  /** Marks the span as failed (the work ended in an error it handled itself). */
  fail(message: string): void;
}

export interface Tracing {
  /**
   * The W3C traceparent of the span active now (flagged not sampled when the request is
   * not, so the later work is not sampled either); undefined outside any span.
   */
  traceparent(): string | undefined;
  /**
   * Runs `fn` inside a new span continuing the trace `traceparent` names (a new trace
   * when it is missing or invalid); spans started in `fn` (backend calls) are its children.
   */
  continueTrace<T>(name: string, traceparent: string | undefined, attributes: SpanAttributes, fn: (span: WorkSpan) => Promise<T>): Promise<T>;
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
