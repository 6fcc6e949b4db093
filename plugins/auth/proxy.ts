/**
 * `auth.mode: proxy`: an upstream layer authenticated the caller and injected identity
 * headers. The consumer and user type are already on the principal (the core's identify
 * step reads `server.consumer_header` / `server.user_type_header`); this step adds groups,
 * roles and scopes from `auth.proxy.*_header` (comma-separated).
 */
import type { GatewayConfig } from "../../core/config/schema.ts";
import type { StageStep } from "../../core/pipeline/pipeline.ts";
import { commaList, scopeList } from "./lists.ts";

export function proxyIdentity(proxy: GatewayConfig["auth"]["proxy"]): StageStep {
  const read = (headers: Headers, name: string) => (name === "" ? null : headers.get(name));
  return function identifyFromProxyHeaders(ctx) {
    const headers = ctx.request.headers;
    const groups = commaList(read(headers, proxy.groups_header));
    const roles = commaList(read(headers, proxy.roles_header));
    const scopes = scopeList(read(headers, proxy.scopes_header));
    const current = ctx.principal;
    // The upstream layer vouches for whatever identity it sent; no identity at all stays anonymous.
    const authenticated = current.consumer !== undefined || current.userType !== undefined || groups.length + roles.length + scopes.length > 0;
    ctx.principal = { consumer: current.consumer, userType: current.userType, groups, roles, scopes, authenticated };
  };
}
