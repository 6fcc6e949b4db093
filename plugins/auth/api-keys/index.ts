/**
 * Gateway-issued API keys (docs/api-keys.md): the `/-/keys` admin API whenever
 * `auth.api_key.secret` is set (keys can be issued before switching modes), and with
 * `auth.mode: api_key` the identify step that accepts only keys, the models step and the
 * `svc_auth_failures_total{reason}` counter.
 */
import { durationMs } from "../../../core/config/duration.ts";
import type { PluginApi } from "../../../core/plugins/types.ts";
import type { AuthConfig } from "../config.ts";
import { backendIdentity } from "../backend-identity.ts";
import { apiKeyIdentity } from "./identify.ts";
import { KeyLookup } from "./lookup.ts";
import { limitToKeyModels } from "./models.ts";
import { registerKeyRoutes } from "./routes.ts";
import { keyHasher } from "./secret.ts";
import { KeyStore } from "./store.ts";
import { stripGatewayKeys } from "./strip.ts";
import { FAILURE_REASONS } from "./verdict.ts";

export function setupApiKeys(api: PluginApi<AuthConfig>): void {
  const auth = api.config.auth;
  const now = () => api.clock.now();
  const store = new KeyStore(api.kv, now);
  const lookup = new KeyLookup(store, {
    ttlMs: durationMs(auth.api_key.cache_ttl),
    staleIfErrorMs: durationMs(auth.api_key.stale_if_error),
    now,
    log: api.log,
  });
  const hash = keyHasher(auth.api_key.secret);
  registerKeyRoutes(api, { store, lookup, hash, adminTokenConfigured: api.has("admin") && api.use("admin").tokenConfigured });
  if (auth.mode !== "api_key") {
    // Runs after the mode's own identify step (registered later in setup): oauth2's backend headers are kept.
    api.stage("identify", stripGatewayKeys);
    return;
  }
  const failures = api.metrics.counter({
    name: "svc_auth_failures_total",
    help: "Requests refused for their API key, by reason (missing, unknown, expired, disabled, revoked, malformed)",
    labelNames: ["reason"],
  });
  for (const reason of FAILURE_REASONS) failures.inc({ reason }, 0);
  api.stage("identify", apiKeyIdentity({ hash, lookup, now, log: api.log, failures, backendIdentity: backendIdentity(api.config) }));
  limitToKeyModels(api);
}
