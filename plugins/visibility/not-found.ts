/**
 * The 404 for a hidden model, worded like the registry's unknown-model errors so a hidden
 * model cannot be told from one that does not exist (spec 4.10). The models it lists are
 * the ones the caller may see.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors, type GatewayError } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { Registry } from "../../core/registry/registry.ts";
import { isVisible } from "./audience.ts";

/** Same rendering as the registry's list of model names. */
function modelNames(services: readonly ServiceConfig[]): string {
  return services.map((s) => s.model).filter((m) => m !== "").join(", ") || "(none configured)";
}

export function hiddenModelError(registry: Registry, ctx: RequestContext, service: ServiceConfig): GatewayError {
  const visible = (candidates: readonly ServiceConfig[]) => modelNames(candidates.filter((s) => isVisible(ctx.principal, s)));
  if (ctx.mode === "async") {
    return errors.notFound(`model "${service.model}" is not available for service type "${service.type}"; available models: ${visible(registry.servicesOfType(service.type))}`);
  }
  const path = ctx.url.pathname;
  const onPath = registry.matchPath(path)?.services ?? [];
  return errors.notFound(`model "${service.model}" is not available on ${path}; available models: ${visible(onPath)}`);
}
