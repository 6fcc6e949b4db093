/**
 * Which models a caller sees and may use, from the rules the access plugins add: a model a
 * hiding rule refuses does not exist for the caller (visibility, an API key's models); one a
 * denying rule refuses exists but is refused (access policies, 403). Rules only answer; the
 * plugin that adds one still answers its own requests in its stage step. Modes ask here to
 * choose a model and to word an unknown model's 404, so that answer lists only what the
 * caller may use and reads the same for a hidden model as for one that does not exist.
 */
import type { ServiceConfig } from "../config/schema.ts";
import { errors, type GatewayError } from "../errors.ts";
import type { RequestContext } from "../pipeline/context.ts";
import { type CallerModels, EVERY_MODEL, type Registry } from "./registry.ts";

/** True when the rule lets the caller of `ctx` have `service`; pure (no counting, no logging): asked about many models per request. */
export type ModelRule = (ctx: RequestContext, service: ServiceConfig) => boolean;

export class ModelAccess {
  private readonly hiding: ModelRule[] = [];
  private readonly denying: ModelRule[] = [];

  constructor(private readonly registry: Registry) {}

  /** A model this rule refuses does not exist for the caller. */
  hide(rule: ModelRule): void {
    this.hiding.push(rule);
  }

  /** A model this rule refuses exists for the caller but is not theirs to use: it is left out of what errors list. */
  deny(rule: ModelRule): void {
    this.denying.push(rule);
  }

  /** False when no rule hides a model from anyone: every caller sees every model. */
  get hidesModels(): boolean {
    return this.hiding.length > 0;
  }

  /** The models of the caller of `ctx`. */
  of(ctx: RequestContext): CallerModels {
    if (this.hiding.length === 0 && this.denying.length === 0) return EVERY_MODEL;
    const sees = (service: ServiceConfig) => this.hiding.every((rule) => rule(ctx, service));
    return { sees, mayUse: (service) => sees(service) && this.denying.every((rule) => rule(ctx, service)) };
  }

  /**
   * The 404 a request answers when the model it named (`model`) is unknown to its caller: on
   * `/jobs/{type}` the job type's wording, on a sync path the path's.
   */
  notFound(ctx: RequestContext, model: string): GatewayError {
    const caller = this.of(ctx);
    if (ctx.mode === "async") return this.registry.unknownJobModel(ctx.serviceType, model, caller);
    const request = { method: ctx.request.method, path: ctx.url.pathname };
    const match = this.registry.matchPath(request.path);
    return match ? this.registry.unknownSyncModel(match, model, request, caller) : errors.noRoute(request.method, request.path);
  }
}
