/** The `auth` service: how callers are named, as this plugin's section says (the contract is core/pipeline/caller-auth.ts). */
import type { CallerAuth } from "../../core/pipeline/caller-auth.ts";
import type { AuthConfig } from "./config.ts";

export function callerAuth(auth: AuthConfig): CallerAuth {
  const mode = auth.mode;
  return {
    mode,
    credentialNamesCaller: mode === "oauth2" || mode === "api_key",
    missingConsumerMessage(headerAdvice) {
      // Every key names a consumer, so this is only reached on a request that needed no key.
      if (mode === "api_key") return "send a gateway API key (Authorization: Bearer <key> or x-api-key: <key>)";
      if (mode !== "oauth2") return headerAdvice;
      const claim = auth.oauth2.claims.consumer;
      if (claim === "") return "bearer tokens name no consumer here: set auth.oauth2.claims.consumer to the token claim that names the consumer";
      return `send a bearer token whose ${claim} claim names the consumer`;
    },
  };
}
