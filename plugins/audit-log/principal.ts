/**
 * Who made an audited request. A request a mode handled carries its principal in the
 * request context; for the others (the core's and admin endpoints) the pipeline's
 * `identify` stage is run on a context of our own, so header identity and `auth.mode` give
 * the same answer they give everywhere else.
 */
import { RequestState } from "../../core/pipeline/context.ts";
import type { PluginApi } from "../../core/plugins/types.ts";

export interface AuditPrincipal {
  consumer?: string;
  user_type?: string;
  /** True when an auth mode vouched for the identity (false: headers or anonymous). */
  authenticated: boolean;
  /** True when the request carried the configured `admin.token`: admin calls are otherwise anonymous. */
  admin_token?: true;
}

export async function principalOf(api: PluginApi<unknown>, request: Request): Promise<AuditPrincipal> {
  const admin = api.has("admin") ? api.use("admin") : undefined;
  const adminToken = admin?.tokenConfigured === true && admin.accepts(request.headers);
  let principal = api.contextOf(request)?.principal;
  if (!principal) {
    const ctx = new RequestState(request, "sync", "", api.clock.now());
    const answered = await api.pipeline.runStage("identify", ctx);
    await answered?.body?.cancel().catch(() => {});
    principal = ctx.principal;
  }
  return {
    ...(principal.consumer !== undefined ? { consumer: principal.consumer } : {}),
    ...(principal.userType !== undefined ? { user_type: principal.userType } : {}),
    authenticated: principal.authenticated,
    ...(adminToken ? { admin_token: true as const } : {}),
  };
}
