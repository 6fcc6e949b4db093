/**
 * Which services a caller may see (spec 4.10), for the generated document: the caller is
 * identified by the pipeline's `identify` stage (header identity, auth) and each restricted
 * service is checked with the `visibility` service. A caller who fails identification is
 * treated as anonymous: the docs are public, they just show the public models.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { anonymous, RequestState, type Principal } from "../../core/pipeline/context.ts";
import type { PluginApi } from "../../core/plugins/types.ts";

export interface Audience {
  /** Same key = same visible services = same document. */
  key: string;
  visible: ServiceConfig[];
}

async function principalOf(api: PluginApi<unknown>, request: Request): Promise<Principal> {
  // A context of our own, not registered with the runtime: this request is not a model request.
  const ctx = new RequestState(request, "sync", "", api.clock.now());
  const answered = await api.pipeline.runStage("identify", ctx);
  if (answered) {
    await answered.body?.cancel().catch(() => {});
    return anonymous;
  }
  return ctx.principal;
}

export async function audienceOf(api: PluginApi<unknown>, request: Request): Promise<Audience> {
  const services = api.registry.services;
  const restricted = services.some((s) => s.visibility !== undefined);
  if (!restricted || !api.has("visibility")) return { key: "all", visible: [...services] };
  const principal = await principalOf(api, request);
  const visibility = api.use("visibility");
  const visible = services.filter((s) => visibility.isVisible(principal, s));
  const key = services.map((s) => (visible.includes(s) ? "1" : "0")).join("");
  return { key, visible };
}
