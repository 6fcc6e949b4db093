/**
 * `auth.mode: proxy`: an upstream layer authenticated the caller and injected identity
 * headers. The consumer and user type are already on the principal (the core's identify
 * step reads `server.consumer_header` / `server.user_type_header`); this step adds groups,
 * roles and scopes from `auth.proxy.*_header` (comma-separated). Each of these headers must
 * come once: repeats (joined by `Headers.get`) would add whatever a client sent to what the
 * proxy sent, so they are refused with 400. A blank list is an empty one, as when absent.
 */
import type { GatewayConfig } from "../../core/config/schema.ts";
import { repeatedIdentityHeader } from "../../core/pipeline/identity.ts";
import type { StageStep } from "../../core/pipeline/pipeline.ts";
import { commaList, scopeList } from "./lists.ts";

export function proxyIdentity(proxy: GatewayConfig["auth"]["proxy"]): StageStep {
  const read = (headers: Headers, name: string) => (name === "" ? null : headers.get(name));
  const listHeaders = [proxy.groups_header, proxy.roles_header, proxy.scopes_header].filter((name) => name !== "");
  return function identifyFromProxyHeaders(ctx) {
    for (const header of listHeaders) {
      const repeated = repeatedIdentityHeader(ctx.request, header);
      if (repeated) return repeated.toResponse();
    }
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
