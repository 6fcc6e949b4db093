/**
 * What a backend is told about the caller in oauth2 mode. The gateway verified the token,
 * not the identity headers the client sent, and a backend that trusts those headers must
 * not receive made-up ones: the bearer token is removed (it authenticates the caller to
 * the gateway, it is no backend credential), the consumer and user type headers
 * (`server.*_header`) carry the token's values or are removed when it has none
 * (docs/design.md#authentication: the auth modes bridge the user type header), and the headers
 * proxy mode reads groups, roles and scopes from (`auth.proxy.*_header`) are removed.
 */
import type { GatewayConfig } from "../../core/config/schema.ts";
import type { Principal } from "../../core/pipeline/context.ts";

export type BackendIdentity = (principal: Principal) => Readonly<Record<string, string | null>>;

export function backendIdentity(config: GatewayConfig): BackendIdentity {
  const removed: Record<string, null> = { authorization: null };
  for (const name of [config.auth.proxy.groups_header, config.auth.proxy.roles_header, config.auth.proxy.scopes_header]) {
    if (name !== "") removed[name.toLowerCase()] = null;
  }
  const consumerHeader = config.server.consumer_header.toLowerCase();
  const userTypeHeader = config.server.user_type_header.toLowerCase();
  return function identityForBackend(principal) {
    const headers: Record<string, string | null> = { ...removed };
    if (consumerHeader !== "") headers[consumerHeader] = principal.consumer ?? null;
    if (userTypeHeader !== "") headers[userTypeHeader] = principal.userType ?? null;
    return headers;
  };
}
