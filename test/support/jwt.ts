/**
 * Signing keys and tokens for auth tests: a locally generated key pair, its public JWK,
 * and JWTs with chosen claims, issuer, audience and expiry.
 */
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  /** The public half as a JWK, with `kid`, `alg` and `use`. */
  jwk: JWK;
}

export async function newSigningKey(kid: string, alg = "RS256"): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { kid, privateKey, jwk };
}

export interface TokenOptions {
  issuer?: string;
  audience?: string | string[];
  /** Seconds since the epoch; default: one hour after `now`. */
  expiresAt?: number;
  notBefore?: number;
  /** Milliseconds since the epoch the token is issued at (default: the system clock). */
  now?: number;
  /** Overrides the key's kid in the header (undefined keeps it; null leaves it out). */
  kid?: string | null;
  alg?: string;
}

export async function signToken(key: SigningKey, claims: JWTPayload, options: TokenOptions = {}): Promise<string> {
  const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
  const kid = options.kid === null ? undefined : (options.kid ?? key.kid);
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? String(key.jwk.alg), ...(kid !== undefined ? { kid } : {}) })
    .setIssuedAt(nowSeconds)
    .setExpirationTime(options.expiresAt ?? nowSeconds + 3600);
  if (options.issuer !== undefined) jwt = jwt.setIssuer(options.issuer);
  if (options.audience !== undefined) jwt = jwt.setAudience(options.audience);
  if (options.notBefore !== undefined) jwt = jwt.setNotBefore(options.notBefore);
  return await jwt.sign(key.privateKey);
}
