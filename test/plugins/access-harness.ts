/**
 * An in-process runtime with the access plugins (auth, visibility, policies) and a tiny
 * test mode in place of the real proxies: any method on a configured path resolves the
 * model like the sync proxy (`{model}` segment or JSON body `model`), `POST /jobs/:type`
 * like async submission (`?model=`), both for the caller's models (`api.modelAccess`), and both answer with what the pipeline left on the
 * context. Services with `provider` set run in mode "llm", and a body's `usage` is reported
 * as an `llm.usage` event, as the LLM proxy does.
 */
import type { MemoryKv } from "../../adapters/kv-memory/index.ts";
import { ManualClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import type { Metrics } from "../../core/metrics.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { Runtime } from "../../core/plugins/host.ts";
import { definePlugin, type PluginDefinition } from "../../core/plugins/types.ts";
import type { KvStore } from "../../core/stores/kv.ts";
import auth from "../../plugins/auth/index.ts";
import policies from "../../plugins/policies/index.ts";
import visibility from "../../plugins/visibility/index.ts";
import { startTestRuntime } from "../support/runtime.ts";

function answer(ctx: RequestContext): Response {
  const { consumer, userType, groups, roles, scopes, authenticated } = ctx.principal;
  return Response.json({
    model: ctx.service?.model,
    service_type: ctx.service?.type,
    mode: ctx.mode,
    principal: { consumer: consumer ?? null, user_type: userType ?? null, groups, roles, scopes, authenticated },
  });
}

/** What a probe request body may carry: the model, and the usage an LLM answer would report. */
interface ProbeBody {
  model?: string;
  usage?: { prompt: number; completion: number };
}

export const probeMode = definePlugin({
  name: "probe-mode",
  setup(api) {
    api.routes.post("/jobs/:type", (c) => {
      const ctx = api.newContext(c.req.raw, "async", c.req.param("type"));
      return api.pipeline.run(ctx, {
        resolve: (ctx) => {
          const resolved = api.registry.resolveJob(ctx.serviceType, ctx.url.searchParams.get("model") ?? undefined, undefined, api.modelAccess.of(ctx));
          if (!resolved.ok) throw resolved.error;
          ctx.service = resolved.value.service;
        },
        handle: answer,
      });
    });
    api.routes.all("*", async (c, next) => {
      const match = api.registry.matchPath(new URL(c.req.url).pathname);
      if (!match) return await next();
      const ctx = api.newContext(c.req.raw, "sync", "");
      let body: ProbeBody = {};
      return await api.pipeline.run(ctx, {
        resolve: async (ctx) => {
          const text = await ctx.request.text();
          body = text === "" ? {} : (JSON.parse(text) as ProbeBody);
          const resolved = api.registry.resolveSync(match, body.model, { method: ctx.request.method, path: ctx.url.pathname }, api.modelAccess.of(ctx));
          if (!resolved.ok) throw resolved.error;
          ctx.service = resolved.value;
          ctx.serviceType = resolved.value.type;
          if (resolved.value.provider !== "") ctx.mode = "llm";
        },
        handle: (ctx) => {
          // Like the LLM proxy: usage is reported while the request is still in flight.
          if (ctx.mode === "llm" && body.usage && ctx.service) {
            api.emit("llm.usage", {
              serviceType: ctx.service.type,
              model: ctx.service.model,
              consumer: ctx.principal.consumer ?? "",
              userType: ctx.principal.userType ?? "",
              prompt: body.usage.prompt,
              completion: body.usage.completion,
              counted: !/no-cache/i.test(ctx.request.headers.get("cache-control") ?? ""),
            });
          }
          return answer(ctx);
        },
      });
    });
  },
});

export interface AccessRuntime {
  runtime: Runtime;
  clock: ManualClock;
  kv: MemoryKv;
  metrics: Metrics;
  /** Every log line, parsed. */
  lines: Array<Record<string, unknown>>;
  request(path: string, init?: { method?: string; headers?: Record<string, string>; body?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

export async function accessRuntime(
  yaml: string,
  options: { fetch?: typeof fetch; clock?: ManualClock; plugins?: readonly PluginDefinition[]; kv?: (memory: MemoryKv) => KvStore } = {},
): Promise<AccessRuntime> {
  const clock = options.clock ?? new ManualClock(Date.now());
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({ level: "debug", write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const started = await startTestRuntime(yaml, [auth, visibility, policies, probeMode, ...(options.plugins ?? [])], {
    clock,
    kv: options.kv ?? ((memory) => memory),
    log,
    fetch: options.fetch ?? (() => Promise.reject(new Error("no outgoing requests expected"))),
    lookupHost: async () => [],
  });
  return {
    runtime: started.runtime,
    clock,
    kv: started.memory as MemoryKv,
    metrics: started.metrics,
    lines,
    request: (path, init = {}) =>
      started.runtime.handle(
        new Request(`http://gateway.test${path}`, {
          method: init.method ?? "POST",
          headers: { "content-type": "application/json", ...init.headers },
          body: init.body === undefined ? undefined : JSON.stringify(init.body),
        }),
      ),
    close: started.close,
  };
}

export { metricValue } from "../support/prometheus.ts";
