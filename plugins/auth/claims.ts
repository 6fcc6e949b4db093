/**
 * A verified token's claims -> the principal, by the names in `auth.oauth2.claims`.
 * A claim name is looked up as a top-level key first (namespaced claims such as
 * `https://example.com/groups` contain dots), then as a dotted path into nested objects
 * (`realm_access.roles`). Groups and roles may be arrays or comma-separated strings;
 * scopes an array or a space-separated string.
 */
import type { GatewayConfig } from "../../core/config/schema.ts";
import type { Principal } from "../../core/pipeline/context.ts";
import { commaList, scopeList } from "./lists.ts";

export type ClaimNames = GatewayConfig["auth"]["oauth2"]["claims"];
export type Claims = Readonly<Record<string, unknown>>;

export function claimValue(claims: Claims, name: string): unknown {
  if (name === "") return undefined;
  if (Object.hasOwn(claims, name)) return claims[name];
  let value: unknown = claims;
  for (const part of name.split(".")) {
    if (typeof value !== "object" || value === null || Array.isArray(value) || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** A single identity value: a non-empty string, or a number as text; anything else is absent. */
function single(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  return text === "" ? undefined : text;
}

function list(value: unknown, split: (text: string) => string[]): string[] {
  if (typeof value === "string") return split(value);
  if (!Array.isArray(value)) return [];
  return [...new Set(value.map(single).filter((item): item is string => item !== undefined))];
}

export function principalFromClaims(claims: Claims, names: ClaimNames): Principal {
  return {
    consumer: single(claimValue(claims, names.consumer)),
    userType: single(claimValue(claims, names.user_type)),
    groups: list(claimValue(claims, names.groups), commaList),
    roles: list(claimValue(claims, names.roles), commaList),
    scopes: list(claimValue(claims, names.scopes), scopeList),
    authenticated: true,
  };
}
