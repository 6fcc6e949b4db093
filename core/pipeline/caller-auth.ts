/**
 * How callers are named, as the auth plugin's settings say: the `auth` service. The core's
 * identify step and the plugins that tell a caller how to name themselves read this instead of
 * the auth plugin's section. Without that service (no auth plugin, or it is off), the identity
 * headers name callers: mode "none".
 */
import type { PluginApi } from "../plugins/types.ts";

export type AuthMode = "none" | "proxy" | "oauth2" | "api_key";

export interface CallerAuth {
  /** `auth.mode`. */
  readonly mode: AuthMode;
  /** oauth2 and api_key: a credential alone names the caller, and the consumer and user type headers a client sends are ignored. */
  readonly credentialNamesCaller: boolean;
  /**
   * What to tell a caller whose request needs their consumer when none was identified:
   * `headerAdvice` (send the consumer header) unless a credential names callers, in the terms
   * of that credential (an API key, a bearer token's claim).
   */
  missingConsumerMessage(headerAdvice: string): string;
}

declare module "../plugins/types.ts" {
  interface GatewayServices {
    /** Provided by the `auth` plugin. */
    auth: CallerAuth;
  }
}

/** The `auth` service when the auth plugin is on; a plugin that asks lists "auth" in `optionalDependsOn`. */
export function callerAuthOf(api: Pick<PluginApi, "has" | "use">): CallerAuth | undefined {
  return api.has("auth") ? api.use("auth") : undefined;
}
