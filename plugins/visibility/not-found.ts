/**
 * The 404 for a hidden model: the registry's own unknown-model answer, computed over the
 * models the caller may see, so a hidden model cannot be told from one that does not
 * exist (spec 4.10). A path or type whose every model is hidden reads like one nothing
 * serves.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors, type GatewayError } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { Registry } from "../../core/registry/registry.ts";
import { isVisible } from "./audience.ts";

export function hiddenModelError(registry: Registry, ctx: RequestContext, service: ServiceConfig): GatewayError {
  const visible = (candidate: ServiceConfig) => isVisible(ctx.principal, candidate);
  if (ctx.mode === "async") return registry.unknownJobModel(service.type, service.model, visible);
  const request = { method: ctx.request.method, path: ctx.url.pathname };
  const match = registry.matchPath(request.path);
  return match ? registry.unknownSyncModel(match, service.model, request, visible) : errors.noRoute(request.method, request.path);
}
