/**
 * A key's `models`: the models outside its globs behave for that key as if they did not
 * exist, like hidden models (docs/design.md#model-visibility): a hiding rule of `api.modelAccess`
 * (no error lists them, no automatic choice picks them, `GET /v1/models` leaves them out, as it
 * asks this stage about each model), and a request that names one gets the unknown model's 404.
 */
import type { ModelRule } from "../../../core/registry/model-access.ts";
import type { PluginApi } from "../../../core/plugins/types.ts";

/** True unless the caller's key limits its models and `service` is not among them. */
export const keyAllowsModel: ModelRule = (ctx, service) => ctx.vars.apiKeyModels?.(service.model) ?? true;

export function limitToKeyModels(api: PluginApi<unknown>): void {
  api.modelAccess.hide(keyAllowsModel);
  api.stage("visibility", function refuseModelsOutsideKey(ctx) {
    const service = ctx.service;
    if (!service || keyAllowsModel(ctx, service)) return;
    return api.modelAccess.notFound(ctx, service.model).toResponse();
  });
}
