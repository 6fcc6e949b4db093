/**
 * `auth.mode: oauth2`: the caller proves who they are with `Authorization: Bearer <JWT>`.
 * The token is verified (signature, issuer, audience, expiry with `clock_skew`) and the
 * principal comes from its claims only: the identity headers a client sends are ignored,
 * so they cannot override the token. A missing or bad token is 401 with a Bearer challenge
 * (RFC 6750); a key set that cannot be fetched is 503, since the token may well be valid.
 * A valid token must name the consumer (the `auth.oauth2.claims.consumer` claim): limits,
 * quotas, usage and job ownership are kept per consumer, and a token without one would
 * pass as anonymous, which bypasses every limit. Backends get the verified identity in
 * place of the client's identity headers (backend-identity.ts).
 */
import { jwtVerify, type JWTVerifyGetKey } from "jose";
import type { Clock } from "../../core/clock.ts";
import { durationMs } from "../../core/config/duration.ts";
import { errors, GatewayError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import type { Principal } from "../../core/pipeline/context.ts";
import type { StageStep } from "../../core/pipeline/pipeline.ts";
import { principalFromClaims } from "./claims.ts";
import type { BackendIdentity } from "./backend-identity.ts";
import type { OAuth2Config } from "./key-source.ts";
import { describeTokenError } from "./token-errors.ts";

export interface OAuth2Deps {
  keys: JWTVerifyGetKey;
  clock: Clock;
  log: Logger;
}

function rejected(description: string): GatewayError {
  return errors.unauthorized(`invalid bearer token: ${description}`, `Bearer error="invalid_token", error_description="${description}"`);
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, RFC 7235 2.1). */
export function bearerToken(headers: Headers): string | undefined {
  const match = /^Bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)[ \t]*$/i.exec(headers.get("authorization") ?? "");
  return match?.[1];
}

export type Verifier = (token: string) => Promise<Principal>;

/** Verifies one token; throws a `GatewayError` (401 or 503) saying why it was refused. */
export function tokenVerifier(oauth2: OAuth2Config, deps: OAuth2Deps): Verifier {
  const clockTolerance = durationMs(oauth2.clock_skew) / 1000;
  return async function verify(token) {
    try {
      const { payload } = await jwtVerify(token, deps.keys, {
        issuer: oauth2.issuer || undefined,
        audience: oauth2.audience || undefined,
        clockTolerance,
        currentDate: new Date(deps.clock.now()),
        // A token without an expiry would be valid forever.
        requiredClaims: ["exp"],
      });
      return principalFromClaims(payload, oauth2.claims);
    } catch (error) {
      const problem = describeTokenError(error);
      if (problem.kind === "invalid_token") throw rejected(problem.description);
      deps.log.warn("auth_keys_unavailable", { jwks_url: oauth2.jwks_url, error: problem.description });
      throw errors.authUnavailable(`cannot verify bearer tokens right now (${problem.description}); retry later`);
    }
  };
}

export interface IdentityOptions {
  /** `auth.oauth2.claims.consumer`; empty: tokens name no consumer and none is required. */
  consumerClaim: string;
  backendIdentity: BackendIdentity;
}

/** A claim name as it may appear in a quoted `error_description` (no `"` or `\`, RFC 6750 3). */
function quotable(text: string): string {
  return text.replace(/["\\]/g, "");
}

export function oauth2Identity(verify: Verifier, options: IdentityOptions): StageStep {
  const noConsumer = rejected(
    `the token names no consumer: its ${quotable(options.consumerClaim)} claim is missing or empty (auth.oauth2.claims.consumer names the consumer claim)`,
  );
  return async function identifyFromBearerToken(ctx) {
    const token = bearerToken(ctx.request.headers);
    if (token === undefined) {
      const sent = ctx.request.headers.has("authorization");
      return rejected(sent ? "the Authorization header is not Bearer <JWT>" : "missing bearer token; send Authorization: Bearer <JWT>").toResponse();
    }
    try {
      const principal = await verify(token);
      if (options.consumerClaim !== "" && principal.consumer === undefined) return noConsumer.toResponse();
      // Replaced, not merged: nothing the core read from identity headers survives.
      ctx.principal = principal;
      ctx.backendHeaders = options.backendIdentity(principal);
    } catch (error) {
      if (error instanceof GatewayError) return error.toResponse();
      throw error;
    }
  };
}
