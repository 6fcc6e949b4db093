/**
 * Why a bearer token was refused, in words a client can act on, and whether the fault is
 * the token's (401) or the key set's (503: the token may be fine, we cannot check it now).
 * Descriptions go into a quoted `error_description`, which may not contain `"` or `\`
 * (RFC 6750 3), so they never quote jose's messages verbatim.
 */
import { errors as jose } from "jose";

export type TokenProblem =
  | { kind: "invalid_token"; description: string }
  | { kind: "keys_unavailable"; description: string };

const invalid = (description: string): TokenProblem => ({ kind: "invalid_token", description });

/** jose's claim-check reasons, as words. */
function claimProblem(claim: string, reason: string): TokenProblem {
  if (reason === "missing") return invalid(`the token has no ${claim} claim`);
  if (claim === "aud") return invalid("the token audience (aud) is not this gateway's audience");
  if (claim === "iss") return invalid("the token issuer (iss) is not the configured issuer");
  if (claim === "nbf") return invalid("the token is not valid yet (nbf)");
  if (claim === "iat") return invalid("the token issue time (iat) is invalid");
  return invalid(`the token ${claim} claim is invalid`);
}

export function describeTokenError(error: unknown): TokenProblem {
  if (error instanceof jose.JWTExpired) return invalid("the token has expired");
  if (error instanceof jose.JWTClaimValidationFailed) return claimProblem(error.claim, error.reason);
  if (error instanceof jose.JWSSignatureVerificationFailed) return invalid("the token signature does not verify");
  if (error instanceof jose.JWKSNoMatchingKey) return invalid("no key of the key set matches the token (check its kid and alg)");
  if (error instanceof jose.JWKSMultipleMatchingKeys) return invalid("several keys of the key set match the token; it needs a kid");
  if (error instanceof jose.JOSEAlgNotAllowed || error instanceof jose.JOSENotSupported) return invalid("the token algorithm is not supported");
  if (error instanceof jose.JWTInvalid || error instanceof jose.JWSInvalid) return invalid("the token is not a well-formed signed JWT");
  // Timeouts, network errors, a non-200 or non-JSON key set answer: nothing is wrong with the token itself.
  if (error instanceof jose.JWKSTimeout) return { kind: "keys_unavailable", description: "fetching the key set timed out" };
  if (error instanceof jose.JWKSInvalid) return { kind: "keys_unavailable", description: "the key set is malformed" };
  if (error instanceof jose.JOSEError && error.code === "ERR_JOSE_GENERIC") return { kind: "keys_unavailable", description: error.message };
  if (error instanceof jose.JOSEError) return invalid("the token cannot be verified");
  return { kind: "keys_unavailable", description: error instanceof Error ? error.message : String(error) };
}
