/**
 * A client span per outbound call (every plugin calls backends through `api.fetch`), child
 * of the request's server span, with the W3C `traceparent` injected so the backend joins
 * the trace (it replaces one a client sent, which the proxy would otherwise pass on).
 * Attempts are numbered per server span, so failover shows as attempt 1, 2, ... with the
 * outcome of each. The span ends when the response head arrives.
 */
import { api as otel } from "@opentelemetry/sdk-node";
import { ATTR } from "../../core/telemetry/attributes.ts";
import type { Tracer } from "./sdk.ts";

export interface ClientSpanDeps {
  tracer: Tracer;
  propagator: otel.TextMapPropagator;
  failed(error: unknown): void;
}

const headerSetter: otel.TextMapSetter<Headers> = { set: (headers, key, value) => headers.set(key, value) };

export type Outcome = "success" | "client_error" | "server_error" | "network_error" | "aborted";

function outcomeOf(status: number): Outcome {
  if (status >= 500) return "server_error";
  if (status >= 400) return "client_error";
  return "success";
}

function urlOf(input: Parameters<typeof fetch>[0]): URL {
  if (input instanceof Request) return new URL(input.url);
  return new URL(input instanceof URL ? input.href : input);
}

export function clientSpans(deps: ClientSpanDeps): (next: typeof fetch) => typeof fetch {
  // Keyed by the parent span object: numbering restarts with every request.
  const attempts = new WeakMap<object, number>();
  return (next) =>
    async function tracedFetch(input, init) {
      let span: otel.Span;
      let headers: Headers;
      try {
        const request = input instanceof Request ? input : undefined;
        const url = urlOf(input);
        const method = (init?.method ?? request?.method ?? "GET").toUpperCase();
        const parent = otel.context.active();
        const parentSpan = otel.trace.getSpan(parent);
        const attempt = (parentSpan ? attempts.get(parentSpan) ?? 0 : 0) + 1;
        if (parentSpan) attempts.set(parentSpan, attempt);
        span = deps.tracer.startSpan(
          method,
          {
            kind: otel.SpanKind.CLIENT,
            attributes: {
              [ATTR.method]: method,
              [ATTR.fullUrl]: `${url.origin}${url.pathname}`,
              [ATTR.serverAddress]: url.hostname,
              [ATTR.serverPort]: Number(url.port || (url.protocol === "https:" ? 443 : 80)),
              [ATTR.attempt]: attempt,
              ...(attempt > 1 ? { [ATTR.resendCount]: attempt - 1 } : {}),
            },
          },
          parent,
        );
        headers = new Headers(init?.headers ?? request?.headers);
        deps.propagator.inject(otel.trace.setSpan(parent, span), headers, headerSetter);
      } catch (error) {
        deps.failed(error);
        return await next(input, init);
      }
      try {
        const response = await next(input, { ...init, headers });
        const outcome = outcomeOf(response.status);
        span.setAttributes({ [ATTR.status]: response.status, [ATTR.outcome]: outcome });
        if (outcome === "server_error") {
          span.setAttribute(ATTR.errorType, String(response.status));
          span.setStatus({ code: otel.SpanStatusCode.ERROR });
        }
        return response;
      } catch (error) {
        const aborted = error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
        span.setAttributes({ [ATTR.outcome]: aborted ? "aborted" : "network_error", [ATTR.errorType]: error instanceof Error ? error.name : "Error" });
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: otel.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
        throw error;
      } finally {
        span.end();
      }
    };
}
