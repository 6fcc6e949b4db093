/**
 * The `tracing` service, for work that outlives the request that asked for it (a relay
 * running a job): the submitting side stores `traceparent()` with the work, the side
 * doing it later runs it in `continueTrace(...)`: a span in that trace, child of the span
 * that handed the work over, so the job's backend calls show up in the submitting
 * request's trace. Only provided when tracing is on; users check `api.has("tracing")`.
 */

export type SpanAttributes = Record<string, string | number | boolean | string[]>;

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

declare module "../plugins/types.ts" {
  interface GatewayServices {
    tracing: Tracing;
  }
}

declare module "../pipeline/context.ts" {
  interface RequestVars {
    /**
     * More attributes for the request's server span, computed only when the span ends (so only
     * when the request is traced): the LLM proxy's GenAI attributes.
     */
    spanAttributes: () => SpanAttributes;
  }
}
