/**
 * Which services a caller may see (docs/design.md#model-visibility), for the generated document:
 * the caller is identified by the pipeline's `identify` stage (header identity, auth) and each
 * service is checked with `api.modelAccess` (visibility's audience, an API key's models). A caller
 * who fails identification is treated as anonymous: the docs are public, they just show the
 * models an anonymous caller sees.
 */
import type { ServiceConfig } from "../../core/config/schema.ts";
import { RequestState } from "../../core/pipeline/context.ts";
import type { PluginApi } from "../../core/plugins/types.ts";

export interface Audience {
  /** Same key = same visible services = same document. */
  key: string;
  visible: ServiceConfig[];
}

async function identified(api: PluginApi<unknown>, request: Request): Promise<RequestState> {
  // A context of our own, not registered with the runtime: this request is not a model request.
  const ctx = new RequestState(request, "sync", "", api.clock.now());
  const answered = await api.pipeline.runStage("identify", ctx);
  if (answered) {
    await answered.body?.cancel().catch(() => {});
    return new RequestState(request, "sync", "", api.clock.now());
  }
  return ctx;
}

export async function audienceOf(api: PluginApi<unknown>, request: Request): Promise<Audience> {
  const services = api.registry.services;
  if (!api.modelAccess.hidesModels) return { key: "all", visible: [...services] };
  const caller = api.modelAccess.of(await identified(api, request));
  const visible = services.filter(caller.sees);
  const key = services.map((s) => (visible.includes(s) ? "1" : "0")).join("");
  return { key, visible };
}
