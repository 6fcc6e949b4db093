/**
 * A server span per request, child of the caller's W3C `traceparent` when it sends one.
 * The span is active while the request is handled, so backend calls made for it (client
 * spans, see client-span.ts) become its children. After the handler it takes what the
 * request resolved to: the route template (the configured sync path for proxied requests),
 * the service type, model, consumer and status, and what the handler added (`spanAttributes`:
 * the LLM proxy's GenAI attributes). It ends when the response head is ready;
 * a streamed body keeps flowing after it.
 */
import type { Context, MiddlewareHandler } from "hono";
import { api as otel, core } from "@opentelemetry/sdk-node";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { Registry } from "../../core/registry/registry.ts";
import { ATTR } from "../../core/telemetry/attributes.ts";
import type {} from "../../core/pricing/price.ts";
import type { Tracer } from "./sdk.ts";

export interface ServerSpanDeps {
  tracer: Tracer;
  propagator: otel.TextMapPropagator;
  ignored(path: string): boolean;
  registry: Registry;
  contextOf(request: Request): RequestContext | undefined;
  /** Reports a telemetry failure; the request goes on untraced. */
  failed(error: unknown): void;
}

const headerGetter: otel.TextMapGetter<Headers> = {
  keys: (headers) => [...headers.keys()],
  get: (headers, key) => headers.get(key) ?? undefined,
};

/** `/jobs/:type/:id` -> `/jobs/{type}/{id}`; undefined when only a catch-all ran. */
function honoRoute(c: Context): string | undefined {
  const route = c.req.routePath;
  if (!route || route === "*" || route === "/*") return undefined;
  return route.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?\??/g, "{$1}");
}

function routeOf(c: Context, ctx: RequestContext | undefined, registry: Registry, path: string): string | undefined {
  if (ctx && (ctx.mode === "sync" || ctx.mode === "llm")) {
    const pattern = registry.matchPath(path)?.pattern;
    if (pattern) return pattern;
  }
  return honoRoute(c);
}

function finish(span: otel.Span, c: Context, url: URL, deps: ServerSpanDeps): void {
  const ctx = deps.contextOf(c.req.raw);
  const status = c.res.status;
  const route = routeOf(c, ctx, deps.registry, url.pathname);
  const attributes: otel.Attributes = { [ATTR.status]: status, [ATTR.mode]: ctx?.mode ?? "admin" };
  if (route) attributes[ATTR.route] = route;
  if (ctx?.serviceType) attributes[ATTR.serviceType] = ctx.serviceType;
  if (ctx?.service?.model) attributes[ATTR.model] = ctx.service.model;
  if (ctx?.principal.consumer) attributes[ATTR.consumer] = ctx.principal.consumer;
  if (ctx?.principal.userType) attributes[ATTR.userType] = ctx.principal.userType;
  if (ctx?.vars.cost !== undefined) attributes[ATTR.cost] = ctx.vars.cost;
  const more = ctx?.vars.spanAttributes;
  if (more) Object.assign(attributes, more());
  if (status >= 500) {
    attributes[ATTR.errorType] = String(status);
    span.setStatus({ code: otel.SpanStatusCode.ERROR });
  }
  span.setAttributes(attributes);
  span.updateName(route ? `${c.req.method} ${route}` : c.req.method);
  span.end();
}

export function serverSpans(deps: ServerSpanDeps): MiddlewareHandler {
  return async function traceRequest(c, next) {
    const url = new URL(c.req.url);
    if (deps.ignored(url.pathname)) {
      // No span here, and none for the backend calls this request makes.
      await otel.context.with(core.suppressTracing(otel.context.active()), next);
      return;
    }
    let span: otel.Span;
    let active: otel.Context;
    try {
      const parent = deps.propagator.extract(otel.ROOT_CONTEXT, c.req.raw.headers, headerGetter);
      span = deps.tracer.startSpan(
        c.req.method,
        {
          kind: otel.SpanKind.SERVER,
          attributes: {
            [ATTR.method]: c.req.method,
            [ATTR.path]: url.pathname,
            [ATTR.scheme]: url.protocol.replace(/:$/, ""),
            ...(c.req.header("user-agent") ? { [ATTR.userAgent]: c.req.header("user-agent") } : {}),
          },
        },
        parent,
      );
      active = otel.trace.setSpan(parent, span);
    } catch (error) {
      deps.failed(error);
      await next();
      return;
    }
    try {
      await otel.context.with(active, next);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      throw error;
    } finally {
      try {
        finish(span, c, url, deps);
      } catch (error) {
        deps.failed(error);
      }
    }
  };
}
