/**
 * The admin token check: `Authorization: Bearer <token>`, compared in constant time (the
 * time taken never tells how much of a guess was right). Both sides are hashed first, so
 * the comparison also takes the same time whatever the guess's length.
 */
import { sha256Hex } from "../../core/crypto/sha256.ts";
import { errors, type GatewayError } from "../../core/errors.ts";

/** Equal strings, in time that depends on neither content nor length. */
export function sameSecret(given: string, expected: string): boolean {
  const a = sha256Hex(given);
  const b = sha256Hex(expected);
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The 401 for a request to a protected endpoint without the right token; undefined when it has it. */
export function adminTokenRefusal(headers: Headers, token: string): GatewayError | undefined {
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(headers.get("authorization") ?? "");
  if (!match) return errors.unauthorized("this endpoint needs the admin token: send Authorization: Bearer <admin.token>", 'Bearer realm="admin"');
  if (!sameSecret(match[1], token)) {
    return errors.unauthorized("the admin token is wrong: send Authorization: Bearer <admin.token>", 'Bearer realm="admin", error="invalid_token"');
  }
  return undefined;
}
