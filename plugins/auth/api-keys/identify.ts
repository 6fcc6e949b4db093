/**
 * `auth.mode: api_key`: the caller sends a gateway key (`Authorization: Bearer <key>`, as
 * OpenAI clients do, or `x-api-key: <key>`, as Anthropic clients do) and the principal is
 * the key's: consumer, user type, groups, roles, scopes and its own limits. Identity
 * headers the client sends are ignored, and backends get the key's consumer and user type
 * in them instead; the key itself never reaches a backend. Admin endpoints (`/-/*`) are
 * not identified by keys (the admin token guards them), so this step leaves them alone.
 * A store that cannot be read refuses the request (503): a key store error must not let
 * unknown callers in (a key it knew may be served from the lookup cache a while longer:
 * `auth.api_key.stale_if_error`, see lookup.ts).
 */
import { durationMs } from "../../../core/config/duration.ts";
import { errors, GatewayError } from "../../../core/errors.ts";
import { anyGlob, type Glob } from "../../../core/glob.ts";
import type { CredentialLimits } from "../../../core/limits/windows.ts";
import type { Logger } from "../../../core/log.ts";
import type { Metrics } from "../../../core/metrics.ts";
import type { Principal } from "../../../core/pipeline/context.ts";
import type { StageStep } from "../../../core/pipeline/pipeline.ts";
import type { BackendIdentity } from "../backend-identity.ts";
import type { KeyLookup } from "./lookup.ts";
import type { KeyLimits, KeyRecord } from "./record.ts";
import type { KeyHasher } from "./secret.ts";
import { isWellFormedKey } from "./secret.ts";
import { type FailureReason, judgeEntry, KeyRefusal, refusals } from "./verdict.ts";

declare module "../../../core/pipeline/context.ts" {
  interface RequestVars {
    /** The models the caller's API key may use (absent: no restriction). */
    apiKeyModels: Glob;
  }
}

export interface KeyIdentityDeps {
  hash: KeyHasher;
  lookup: KeyLookup;
  now: () => number;
  log: Logger;
  failures: ReturnType<Metrics["counter"]>;
  backendIdentity: BackendIdentity;
}

/** The key a request carries, or why it carries none usable. */
export function sentKey(headers: Headers): string | KeyRefusal {
  const authorization = headers.get("authorization");
  if (authorization !== null) {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (!match) return refusals.malformed("the Authorization header is not Bearer <key>");
    return isWellFormedKey(match[1]) ? match[1] : refusals.malformed("the key in the Authorization header is not a gateway key");
  }
  const header = headers.get("x-api-key");
  if (header === null) return refusals.missing;
  const key = header.trim();
  return isWellFormedKey(key) ? key : refusals.malformed("the x-api-key header is not a gateway key");
}

function principalOf(record: KeyRecord): Principal {
  const limits = record.limits;
  return {
    consumer: record.consumer,
    ...(record.user_type !== undefined ? { userType: record.user_type } : {}),
    groups: record.groups,
    roles: record.roles,
    scopes: record.scopes,
    authenticated: true,
    keyId: record.id,
    ...(limits ? credentialLimits(record.id, limits) : {}),
  };
}

/** The key's limits as the limits plugin enforces them; none when every one is off. */
function credentialLimits(id: string, limits: KeyLimits): { limits?: CredentialLimits } {
  // Keys stored before the dollar budget existed have no cost fields.
  const costRate = limits.cost_rate ?? 0;
  if (!(limits.rate > 0 || limits.token_rate > 0 || costRate > 0)) return {};
  return {
    limits: {
      id,
      rate: limits.rate,
      periodMs: durationMs(limits.period),
      tokenRate: limits.token_rate,
      tokenPeriodMs: durationMs(limits.token_period),
      costRate,
      costPeriodMs: durationMs(limits.cost_period ?? "24h"),
    },
  };
}

export function apiKeyIdentity(deps: KeyIdentityDeps): StageStep {
  const globs = new Map<string, Glob>();
  const refuse = (refusal: KeyRefusal) => {
    deps.failures.inc({ reason: refusal.reason satisfies FailureReason });
    return refusal.error().toResponse();
  };
  return async function identifyFromApiKey(ctx) {
    if (ctx.url.pathname.startsWith("/-/")) return;
    const key = sentKey(ctx.request.headers);
    if (key instanceof KeyRefusal) return refuse(key);
    let verdict: KeyRecord | KeyRefusal;
    try {
      verdict = judgeEntry(await deps.lookup.find(await deps.hash(key)), deps.now());
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      deps.log.error("api_key_lookup_failed", { error });
      return errors.storeUnavailable("API keys cannot be checked right now: the key-value store failed; retry later").toResponse();
    }
    if (verdict instanceof KeyRefusal) return refuse(verdict);
    ctx.principal = principalOf(verdict);
    ctx.backendHeaders = { ...deps.backendIdentity(ctx.principal), "x-api-key": null };
    if (verdict.models.length > 0) {
      const id = verdict.models.join("\n");
      let glob = globs.get(id);
      if (!glob) {
        glob = anyGlob(verdict.models);
        if (globs.size > 1000) globs.clear();
        globs.set(id, glob);
      }
      ctx.vars.apiKeyModels = glob;
    }
  };
}
