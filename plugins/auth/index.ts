/**
 * Caller identity (`auth.mode`, docs/design.md#authentication): on for `proxy`, `oauth2` and
 * `api_key` (and to serve `/-/keys` whenever `auth.api_key.secret` is set); with `none` the
 * core's header identity is all there is. Its identify step runs
 * after the core's, so the principal it leaves is the one visibility, policies, limits,
 * usage and job ownership read.
 */
import { PluginError } from "../../core/plugins/host.ts";
import { definePlugin } from "../../core/plugins/types.ts";
import { keysPanel } from "./api-keys/console-panel.ts";
import { setupApiKeys } from "./api-keys/index.ts";
import { apiKeysOpenApi } from "./api-keys/openapi.ts";
import { authSection } from "./config.ts";
import { backendIdentity } from "./backend-identity.ts";
import { callerAuth } from "./caller-auth.ts";
import { proxyIdentity } from "./proxy.ts";

// At the top level, as in the otel plugin: tsc (5.9) leaves the `.ts` extension of an
// `import()` nested in a plugin's setup, which Node then cannot find.
const loadKeySource = () => import("./key-source.ts");
const loadOAuth2 = () => import("./oauth2.ts");

export default definePlugin({
  name: "auth",
  // Before the features (once the integrations it uses are set up): its identify step leaves
  // the principal every later step reads.
  layer: "identity",
  // The admin token guards /-/keys.
  optionalDependsOn: ["admin"],
  // Visibility's step runs before the key's models step: a model hidden from the caller is
  // counted as hidden (svc_model_hidden_total) whatever the key allows.
  after: ["visibility"],
  section: authSection,
  // Declared whether auth is on or off: the keys panel then says how to turn keys on.
  openapi: apiKeysOpenApi,
  consolePanels: [keysPanel],
  // A key secret alone turns it on: /-/keys issues keys before the mode is switched to api_key.
  enabled: (config) => config.auth.mode !== "none" || config.auth.api_key.secret !== "",
  async setup(api) {
    const auth = api.config.auth;
    // How callers are named, for the core's identify step and the plugins that tell a caller how to name themselves.
    api.provide("auth", callerAuth(auth));
    if (auth.mode === "api_key") return setupApiKeys(api);
    if (auth.mode === "proxy") api.stage("identify", proxyIdentity(auth.proxy));
    if (auth.mode !== "oauth2") {
      if (auth.api_key.secret !== "") setupApiKeys(api);
      return;
    }
    // The JWT library (jose) is loaded only when tokens are verified: ~2.5 MB of resident
    // memory in every gateway otherwise, since every plugin module is imported at start.
    const { keySource, oauth2Problems } = await loadKeySource();
    const { oauth2Identity, tokenVerifier } = await loadOAuth2();
    const problems = oauth2Problems(auth.oauth2);
    if (problems.length > 0) throw new PluginError(problems.join("; "), problems); // each names its auth.oauth2 key
    for (const field of ["issuer", "audience"] as const) {
      if (auth.oauth2[field] === "") {
        api.log.warn("auth_oauth2_unchecked_claim", {
          field: `auth.oauth2.${field}`,
          message: `empty, so tokens are accepted whatever their ${field === "issuer" ? "iss" : "aud"}`,
        });
      }
    }
    const verify = tokenVerifier(auth.oauth2, { keys: keySource(auth.oauth2, api.fetch), clock: api.clock, log: api.log });
    api.stage("identify", oauth2Identity(verify, { consumerClaim: auth.oauth2.claims.consumer, backendIdentity: backendIdentity(api.config) }));
    if (auth.api_key.secret !== "") setupApiKeys(api);
  },
});
