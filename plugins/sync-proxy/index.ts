/**
 * Sync proxy: every path a service's `operations` declare, any method, resolved through
 * the registry and served by the first sync mode that accepts it (the LLM proxy registers
 * one through the `syncModes` service) or else forwarded as is by the direct proxy.
 * Also `GET /v1/models` (spec 2.3, 4.7).
 */
import { durationMs } from "../../core/config/duration.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { SPEC_FAILOVER } from "../../core/proxy/backend-health.ts";
import { directProxy, type CallSettings } from "./direct-proxy.ts";
import { modelListHandler } from "./model-list.ts";
import { syncProxyOpenApi } from "./openapi.ts";
import { syncBodyLimit } from "./request-body.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { ServiceConfig } from "../../core/config/schema.ts";
import { resolveSyncRequest, type Resolved } from "./resolve.ts";
import { SyncModeList } from "./sync-modes.ts";

export default definePlugin({
  name: "sync-proxy",
  // Hides restricted models from /v1/models and its routes; skips backends sitting out.
  optionalDependsOn: ["visibility", "backend-health"],
  // Its catch-all route goes after every other plugin's routes (/jobs, /usage, /docs, ...), so
  // a configured wildcard path cannot shadow them: last among the plugins free to go.
  priority: -100,
  openapi: syncProxyOpenApi,
  setup(api) {
    const modes = new SyncModeList();
    api.provide("syncModes", modes);

    const settings: CallSettings = {
      fetch: api.fetch,
      timeoutMs: durationMs(api.config.server.backend_timeout),
      log: api.log,
      health: api.has("backendHealth") ? api.use("backendHealth") : SPEC_FAILOVER,
    };
    // Visibility (when active) is set up before this plugin; resolution then considers only
    // the models the caller may see (automatic choice, error messages).
    const visibility = api.has("visibility") ? api.use("visibility") : undefined;
    const resolveDeps = {
      registry: api.registry,
      modes,
      bodyLimit: syncBodyLimit(api.config.server.max_body_mb),
      visibleFor: visibility ? (ctx: RequestContext) => (service: ServiceConfig) => visibility.isVisible(ctx.principal, service) : undefined,
    };
    const direct = directProxy(settings);
    const listModels = modelListHandler({
      registry: api.registry,
      pipeline: api.pipeline,
      newContext: (request, mode, serviceType) => api.newContext(request, mode, serviceType),
      settings,
    });

    // Before the catch-all, so a configured `/v1/*` wildcard does not swallow the model list.
    api.routes.get("/v1/models", (c) => listModels(c.req.raw));

    // One catch-all instead of a route per configured path: the registry already knows the
    // paths (exact, `{model}` templates, wildcards) and their priority. Paths it does not
    // know fall through to later plugins' routes and the core's 404.
    api.routes.all("*", async function syncProxy(c, next) {
      const match = api.registry.matchPath(new URL(c.req.url).pathname);
      if (!match) {
        await next();
        return;
      }
      const ctx = api.newContext(c.req.raw, "sync", "");
      let resolved: Resolved | undefined;
      return await api.pipeline.run(ctx, {
        resolve: async (ctx) => {
          resolved = await resolveSyncRequest(resolveDeps, match, ctx);
          resolved.mode?.prepare?.(ctx, resolved.body);
        },
        handle: (ctx) => {
          if (!resolved) throw new Error("sync handler reached without a resolved request");
          return resolved.mode ? resolved.mode.handle(ctx, resolved.body) : direct(ctx, resolved.body);
        },
      });
    });
  },
});
