/**
 * The sync route's resolve stage (docs/design.md#sync-requests): read the body as the mode needs
 * it, resolve the model from the `{model}` path segment or the body's `model`, and choose who
 * serves the request: the first registered sync mode that accepts it (once it has checked the
 * body), else the direct proxy.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { errors } from "../../core/errors.ts";
import type { RequestContext } from "../../core/pipeline/context.ts";
import type { SyncBody, SyncMode } from "../../core/proxy/modes.ts";
import type { ModelAccess } from "../../core/registry/model-access.ts";
import type { PathMatch, Registry } from "../../core/registry/registry.ts";
import type { BodyLimit } from "../../core/request-body/read-bytes.ts";
import { isUntypedContentType, readSyncBody, readUntypedBody } from "./request-body.ts";
import type { SyncModeList } from "./sync-modes.ts";

const hasProvider = (service: ServiceConfig) => service.provider !== "";

export interface Resolved {
  body: SyncBody;
  /** Undefined: the direct proxy serves the request. */
  mode?: SyncMode;
  /** False when the model is hidden from the caller: the visibility stage answers it, nothing may be prepared for it. */
  seen: boolean;
}

export interface ResolveDeps {
  registry: Registry;
  modes: SyncModeList;
  /** `server.max_body_mb` as a body limit. */
  bodyLimit: BodyLimit;
  /** The models each caller sees and may use: only those are auto-selected or named in errors. */
  modelAccess: ModelAccess;
}

export async function resolveSyncRequest(deps: ResolveDeps, match: PathMatch, ctx: RequestContext): Promise<Resolved> {
  let body = await readSyncBody(ctx.request, deps.bodyLimit);
  // A JSON body sent as text/plain, form-urlencoded or with no type is still an LLM request on
  // an LLM path (docs/design.md#request-modes and docs/design.md#sync-requests): checked only for
  // such bodies, so a JSON request pays nothing.
  if (body.kind === "stream" && body.stream && isUntypedContentType(body.contentType) && match.services.some(hasProvider)) {
    body = await readUntypedBody(ctx.request, body.stream, body.contentType, deps.bodyLimit);
  }
  const requested = body.kind === "json" ? body.value.model : undefined;
  if (requested !== undefined && typeof requested !== "string") {
    throw errors.badRequest(`"model" must be a string naming one of the models on ${ctx.url.pathname}`);
  }
  const caller = deps.modelAccess.of(ctx);
  const resolution = deps.registry.resolveSync(match, requested, { method: ctx.request.method, path: ctx.url.pathname }, caller);
  if (!resolution.ok) throw resolution.error;
  const service = resolution.value;
  ctx.service = service;
  ctx.serviceType = service.type;
  ctx.vars.syncBody = body;
  const mode = deps.modes.pick(service, body);
  ctx.mode = mode?.mode ?? "sync";
  mode?.check?.(ctx, body);
  return { body, mode, seen: caller.sees(service) };
}
