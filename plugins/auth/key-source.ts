/**
 * Where token signatures are checked against: the issuer's JWKS endpoint
 * (`auth.oauth2.jwks_url`, cached and refetched by jose) or keys written in the config
 * (`auth.oauth2.keys`). Config problems are returned with their paths, for a start refusal.
 */
import { createLocalJWKSet, createRemoteJWKSet, customFetch, type JSONWebKeySet, type JWK, type JWTVerifyGetKey } from "jose";
import type { GatewayConfig } from "../../core/config/schema.ts";

export type OAuth2Config = GatewayConfig["auth"]["oauth2"];

/**
 * A token whose `kid` is not in the cached key set triggers a refetch at most this often
 * (jose's default is 30 s). A short cooldown lets a rotated signing key be accepted within
 * seconds while still bounding the load unknown `kid`s can put on the issuer.
 */
export const JWKS_REFETCH_COOLDOWN_MS = 2_000;
/** A cached key set older than this is refetched before use (jose's default, 10 min). */
export const JWKS_MAX_AGE_MS = 600_000;

function keyProblems(keys: OAuth2Config["keys"]): string[] {
  const problems: string[] = [];
  keys.forEach((key, index) => {
    const at = `auth.oauth2.keys[${index}]`;
    if (typeof key.kty !== "string") problems.push(`${at}.kty: required (a JWK such as {kty: RSA, n: ..., e: AQAB, kid: ...})`);
    else if (key.kty === "oct") problems.push(`${at}: symmetric (oct) keys are not accepted; give the issuer's public keys`);
    if (key.d !== undefined) problems.push(`${at}: is a private key; give only its public part (no "d")`);
  });
  return problems;
}

export function oauth2Problems(oauth2: OAuth2Config): string[] {
  const problems: string[] = [];
  if (oauth2.jwks_url === "" && oauth2.keys.length === 0) {
    problems.push("auth.oauth2: set jwks_url (the issuer's JWKS endpoint) or keys (inline public JWKs) to verify bearer tokens");
  }
  if (oauth2.jwks_url !== "" && oauth2.keys.length > 0) problems.push("auth.oauth2.keys: set either jwks_url or keys, not both");
  if (oauth2.jwks_url !== "" && !/^https?:\/\/[^/]/.test(oauth2.jwks_url)) {
    problems.push(`auth.oauth2.jwks_url: must be an http:// or https:// URL, got "${oauth2.jwks_url}"`);
  }
  problems.push(...keyProblems(oauth2.keys));
  if (problems.length === 0 && oauth2.keys.length > 0) {
    try {
      createLocalJWKSet(inlineKeySet(oauth2.keys));
    } catch (error) {
      problems.push(`auth.oauth2.keys: ${(error as Error).message}`);
    }
  }
  return problems;
}

/** The config's keys as a JWKS; their shape was checked by `oauth2Problems`. */
function inlineKeySet(keys: OAuth2Config["keys"]): JSONWebKeySet {
  return { keys: keys.map((key) => ({ ...key }) as JWK) };
}

/** Call only with a config `oauth2Problems` accepted. */
export function keySource(oauth2: OAuth2Config, fetchImpl: typeof fetch): JWTVerifyGetKey {
  if (oauth2.keys.length > 0) return createLocalJWKSet(inlineKeySet(oauth2.keys));
  return createRemoteJWKSet(new URL(oauth2.jwks_url), {
    cooldownDuration: JWKS_REFETCH_COOLDOWN_MS,
    cacheMaxAge: JWKS_MAX_AGE_MS,
    // The runtime's injectable HTTP client, like every other outgoing call.
    [customFetch]: (url, init) => fetchImpl(url, init),
  });
}
