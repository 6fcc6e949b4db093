/**
 * `GET /v1/models` (docs/design.md#model-list): one entry per service with a model alias, and
 * `?model=<name>` proxied to that model's backend as `GET /v1/models/<backend model or
 * alias>`, whose native answer is returned as is. `GET /v1/models/{model}` (the OpenAI
 * clients' `models.retrieve`) answers the model's own entry of the list.
 *
 * Visibility is not decided here: the request runs the pipeline's `identify` stage, then
 * the `visibility` stage is asked about each model (with `ctx.service` set to it). A model
 * a visibility step answers for is left out of the list, and `?model=` or `/v1/models/{model}`
 * for it is the same 404 (`model_not_found`) as an unknown model, so a hidden model looks
 * non-existent (docs/design.md#model-visibility). That 404 lists the models the caller may use.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors, GatewayError, toErrorResponse } from "../../core/errors.ts";
import type { RequestContext, RequestMode, RequestState } from "../../core/pipeline/context.ts";
import type { Pipeline } from "../../core/pipeline/pipeline.ts";
import { backendOrder, type BackendTarget } from "../../core/proxy/backends.ts";
import { forwardHeaders } from "../../core/proxy/headers.ts";
import type { ModelAccess } from "../../core/registry/model-access.ts";
import type { Registry } from "../../core/registry/registry.ts";
import { type CallSettings, noBackend } from "./direct-proxy.ts";
import { backendUrl, forward } from "./forward.ts";

/** The fixed `owned_by` label of every entry. */
export const OWNER = "gateway";

export interface ModelEntry {
  id: string;
  object: "model";
  owned_by: string;
  service_type: string;
  provider?: string;
  backend_model?: string;
  capabilities: { supports_sync: boolean; supports_streaming: boolean; deprecated: boolean };
}

export function modelEntry(service: ServiceConfig): ModelEntry {
  // Only the service-level rewrite is shown, and only when it changes the name; never backends[].model.
  const rewrites = service.backend_model !== "" && service.backend_model !== service.model;
  return {
    id: service.model,
    object: "model",
    owned_by: OWNER,
    service_type: service.type,
    ...(service.provider !== "" ? { provider: service.provider } : {}),
    ...(rewrites ? { backend_model: service.backend_model } : {}),
    capabilities: {
      supports_sync: Object.values(service.operations).some((paths) => paths.length > 0),
      supports_streaming: service.provider !== "",
      deprecated: service.deprecated,
    },
  };
}

export interface ModelListDeps {
  registry: Registry;
  modelAccess: ModelAccess;
  pipeline: Pipeline;
  newContext(request: Request, mode: RequestMode, serviceType: string): RequestState;
  settings: CallSettings;
}

/** Whether the visibility stage lets this caller see `service`; the context is left as it was. */
async function visibleTo(pipeline: Pipeline, ctx: RequestContext, service: ServiceConfig): Promise<boolean> {
  const before = { service: ctx.service, serviceType: ctx.serviceType };
  ctx.service = service;
  ctx.serviceType = service.type;
  try {
    const answer = await pipeline.runStage("visibility", ctx);
    await answer?.body?.cancel().catch(() => {});
    return answer === undefined;
  } finally {
    ctx.service = before.service;
    ctx.serviceType = before.serviceType;
  }
}

function unknownModel(deps: ModelListDeps, ctx: RequestContext, name: string): GatewayError {
  const caller = deps.modelAccess.of(ctx);
  const names = deps.registry.models().filter(caller.mayUse).map((s) => s.model).join(", ") || "(none)";
  return errors.modelNotFound(`model "${name}" does not exist; available models: ${names}`);
}

/** The service with the alias `name`, when the caller sees it; else the unknown model's 404. */
async function seenModel(deps: ModelListDeps, ctx: RequestContext, name: string): Promise<ServiceConfig> {
  const service = name === "" ? undefined : deps.registry.findModel(name);
  if (!service || !(await visibleTo(deps.pipeline, ctx, service))) throw unknownModel(deps, ctx, name);
  return service;
}

async function visibleModels(deps: ModelListDeps, ctx: RequestContext): Promise<ServiceConfig[]> {
  const visible: ServiceConfig[] = [];
  for (const service of deps.registry.models()) if (await visibleTo(deps.pipeline, ctx, service)) visible.push(service);
  return visible;
}

/** `?model=`: the model's own backend answers, at `/v1/models/<backend model or alias>`. */
async function modelInfo(deps: ModelListDeps, ctx: RequestContext, name: string): Promise<Response> {
  const service = await seenModel(deps, ctx, name);
  ctx.service = service;
  ctx.serviceType = service.type;
  const targets = backendOrder(service);
  if (targets.length === 0) throw noBackend(service);
  const build = (target: BackendTarget) => ({
    url: backendUrl(target.url, `/v1/models/${encodeURIComponent(target.model || service.model)}`),
    init: { method: "GET", headers: forwardHeaders(ctx.request.headers, target.headers, ["accept-encoding", "content-type"], ctx.backendHeaders) },
  });
  return await forward(targets, build, "GET", {
    ...deps.settings,
    clientSignal: ctx.clientGone,
    model: service.model,
    serviceType: service.type,
    ownBodies: ctx.ownBodies,
  });
}

/** Runs `answer` for the identified caller of `request`; a refusal or failure becomes the error answer. */
async function forCaller(deps: ModelListDeps, request: Request, answer: (ctx: RequestContext) => Promise<Response>): Promise<Response> {
  const ctx = deps.newContext(request, "sync", "");
  try {
    const denied = await deps.pipeline.runStage("identify", ctx);
    if (denied) return denied;
    return await answer(ctx);
  } catch (error) {
    if (!(error instanceof GatewayError)) deps.settings.log.error("model_list_failed", { error });
    return toErrorResponse(error);
  }
}

export function modelListHandler(deps: ModelListDeps) {
  return function listModels(request: Request): Promise<Response> {
    return forCaller(deps, request, async (ctx) => {
      const name = ctx.url.searchParams.get("model");
      if (name !== null) return await modelInfo(deps, ctx, name);
      const data = (await visibleModels(deps, ctx)).map(modelEntry);
      return Response.json({ object: "list", data });
    });
  };
}

/** `GET /v1/models/{model}`: the model's entry of the list, as the caller would see it there. */
export function modelEntryHandler(deps: ModelListDeps) {
  return function retrieveModel(request: Request, name: string): Promise<Response> {
    return forCaller(deps, request, async (ctx) => Response.json(modelEntry(await seenModel(deps, ctx, name))));
  };
}
