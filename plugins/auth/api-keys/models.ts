/**
 * A key's `models`: the models outside its globs behave for that key as if they did not
 * exist, like hidden models (spec 4.10): 404 with the registry's unknown-model answer over
 * the models the key may see, and absent from `GET /v1/models` (which asks this stage about
 * each model). `alsoVisible` is the visibility plugin's audience rule when it is on, so the
 * 404's list of models names none the caller may not see for another reason.
 */
import type { ServiceConfig } from "../../../core/config/schema.ts";
import { errors } from "../../../core/errors.ts";
import type { Principal } from "../../../core/pipeline/context.ts";
import type { StageStep } from "../../../core/pipeline/pipeline.ts";
import type { Registry } from "../../../core/registry/registry.ts";

export function keyModelsStep(registry: Registry, alsoVisible: (principal: Principal, service: ServiceConfig) => boolean): StageStep {
  return function limitToKeyModels(ctx) {
    const allowed = ctx.vars.apiKeyModels;
    const service = ctx.service;
    if (!allowed || !service || allowed(service.model)) return;
    const visible = (candidate: ServiceConfig) => allowed(candidate.model) && alsoVisible(ctx.principal, candidate);
    if (ctx.mode === "async") return registry.unknownJobModel(service.type, service.model, visible).toResponse();
    const request = { method: ctx.request.method, path: ctx.url.pathname };
    const match = registry.matchPath(request.path);
    return (match ? registry.unknownSyncModel(match, service.model, request, visible) : errors.noRoute(request.method, request.path)).toResponse();
  };
}
