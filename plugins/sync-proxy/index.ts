/**
 * Sync proxy: every path a service's `operations` declare, any method, resolved through
 * the registry and served by the first sync mode that accepts it (the LLM proxy registers
 * one through the `syncModes` service) or else forwarded as is by the direct proxy.
 * Also `GET /v1/models` (docs/design.md#model-list) and `GET /v1/models/{model}`.
 */
import { durationMs } from "../../core/config/duration.ts";
import type { RequestMode } from "../../core/pipeline/context.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { SPEC_FAILOVER } from "../../core/proxy/backend-health.ts";
import { type CallSettings, directProxy } from "./direct-proxy.ts";
import { modelEntryHandler, modelListHandler } from "./model-list.ts";
import { syncProxyOpenApi } from "./openapi.ts";
import { syncBodyLimit } from "./request-body.ts";
import { type Resolved, resolveSyncRequest } from "./resolve.ts";
import { SyncModeList } from "./sync-modes.ts";

export default definePlugin({
  name: "sync-proxy",
  // Skips backends sitting out.
  optionalDependsOn: ["backend-health"],
  // Its catch-all route goes after every other plugin's routes (/jobs, /usage, /docs, ...), so
  // a configured wildcard path cannot shadow them: last among the plugins free to go.
  layer: "catch-all",
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
    // Resolution considers only the models the caller sees (automatic choice) and names only
    // those it may use (error messages).
    const resolveDeps = {
      registry: api.registry,
      modes,
      bodyLimit: syncBodyLimit(api.config.server.max_body_mb),
      modelAccess: api.modelAccess,
    };
    const direct = directProxy(settings);
    const modelListDeps = {
      registry: api.registry,
      modelAccess: api.modelAccess,
      pipeline: api.pipeline,
      newContext: (request: Request, mode: RequestMode, serviceType: string) => api.newContext(request, mode, serviceType),
      settings,
    };
    const listModels = modelListHandler(modelListDeps);
    const retrieveModel = modelEntryHandler(modelListDeps);

    // Before the catch-all, so a configured `/v1/*` wildcard does not swallow the model list.
    api.routes.get("/v1/models", (c) => listModels(c.req.raw));
    // An alias may hold a `/` (`meta/llama-3`), sent as it is or as %2F.
    api.routes.get("/v1/models/:model{.+}", (c) => retrieveModel(c.req.raw, c.req.param("model")));

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
          if (resolved.seen) resolved.mode?.prepare?.(ctx, resolved.body);
        },
        handle: (ctx) => {
          if (!resolved) throw new Error("sync handler reached without a resolved request");
          return resolved.mode ? resolved.mode.handle(ctx, resolved.body) : direct(ctx, resolved.body);
        },
      });
    });
  },
});
