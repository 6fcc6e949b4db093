/**
 * Model visibility (docs/design.md#model-visibility), on when some service has `visibility`. A
 * model hidden from the caller behaves as non-existent: the visibility stage answers the unknown
 * model's 404 (never 403) for requests that resolve to it, `GET /v1/models` leaves it out (the
 * model list asks this same stage about each model), and the audience rule is a hiding rule of
 * `api.modelAccess`, so no error lists it and no automatic choice picks it. Other plugins
 * (generated API docs) ask the `visibility` service.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import type { Principal } from "../../core/pipeline/context.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { visibilityServiceFields } from "./config.ts";
import { isVisible } from "./audience.ts";

export interface ModelVisibility {
  /** True when `principal` is in the service's audience (always, for a public service). */
  isVisible(principal: Principal, service: ServiceConfig): boolean;
}

declare module "../../core/plugins/types.ts" {
  interface GatewayServices {
    visibility: ModelVisibility;
  }
}

export default definePlugin({
  name: "visibility",
  serviceFields: visibilityServiceFields,
  enabled: (config) => config.services.some((service) => service.visibility !== undefined),
  setup(api) {
    const hidden = api.metrics.counter({
      name: "svc_model_hidden_total",
      help: "Times a model was hidden from a caller outside its audience (a 404 or an omission from the model list), by service type and model",
      labelNames: ["service_type", "model"],
    });
    api.provide("visibility", { isVisible });
    api.modelAccess.hide((ctx, service) => isVisible(ctx.principal, service));
    // Answers (never throws): the model list runs this stage per model and only looks at whether it answered.
    api.stage("visibility", function hideRestrictedModels(ctx) {
      const service = ctx.service;
      if (!service || isVisible(ctx.principal, service)) return;
      hidden.inc({ service_type: service.type, model: service.model });
      return api.modelAccess.notFound(ctx, service.model).toResponse();
    });
  },
});
