import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../plugins/config.ts";
import { type ClaimNames, claimValue, principalFromClaims } from "../../../plugins/auth/claims.ts";
import { commaList, scopeList } from "../../../plugins/auth/lists.ts";
import { bearerToken } from "../../../plugins/auth/oauth2.ts";

function claimNames(yaml = ""): ClaimNames {
  return loadConfig(`auth:\n  mode: oauth2\n  oauth2:\n    jwks_url: https://idp.test/jwks\n    claims:\n${yaml || "      {}"}\n`, {}).config.auth.oauth2
    .claims;
}

describe("identity lists", () => {
  it("comma lists are trimmed, without empties or repeats", () => {
    expect(commaList(" a, b ,,c,a ")).toEqual(["a", "b", "c"]);
    expect(commaList("Data Science, ml")).toEqual(["Data Science", "ml"]);
    expect(commaList("")).toEqual([]);
    expect(commaList(null)).toEqual([]);
  });

  it("scope lists split on spaces (RFC 6749) and commas", () => {
    expect(scopeList("read  write\tadmin")).toEqual(["read", "write", "admin"]);
    expect(scopeList("read,write, admin")).toEqual(["read", "write", "admin"]);
    expect(scopeList(" ")).toEqual([]);
  });
});

describe("bearer token extraction", () => {
  const headers = (value?: string) => new Headers(value === undefined ? {} : { authorization: value });

  it("takes the token of Authorization: Bearer, the scheme in any case", () => {
    expect(bearerToken(headers("Bearer abc.def.ghi"))).toBe("abc.def.ghi");
    expect(bearerToken(headers("bearer abc.def.ghi "))).toBe("abc.def.ghi");
    expect(bearerToken(headers("BEARER a-b_c.d~e+f/g=="))).toBe("a-b_c.d~e+f/g==");
  });

  it("finds none without the header, with another scheme, or with an empty or spaced token", () => {
    expect(bearerToken(headers())).toBeUndefined();
    expect(bearerToken(headers("Basic dXNlcjpwYXNz"))).toBeUndefined();
    expect(bearerToken(headers("Bearer"))).toBeUndefined();
    expect(bearerToken(headers("Bearer a b"))).toBeUndefined();
  });
});

describe("claims mapping (auth.oauth2.claims)", () => {
  it("maps the default claim names: sub, groups, roles, scope; no user type", () => {
    const principal = principalFromClaims({ sub: "alice", groups: ["ml", "ops"], roles: ["admin"], scope: "read write", user_type: "premium" }, claimNames());
    expect(principal).toEqual({
      consumer: "alice",
      userType: undefined,
      groups: ["ml", "ops"],
      roles: ["admin"],
      scopes: ["read", "write"],
      authenticated: true,
    });
  });

  it("maps configured names, with comma strings for groups and roles and an array for scopes", () => {
    const names = claimNames("      consumer: client_id\n      user_type: tier\n      groups: teams\n      roles: perms\n      scopes: scp\n");
    const principal = principalFromClaims({ client_id: "svc-1", tier: "premium", teams: "ml, ops", perms: "admin,viewer", scp: ["read", "write"] }, names);
    expect(principal).toEqual({
      consumer: "svc-1",
      userType: "premium",
      groups: ["ml", "ops"],
      roles: ["admin", "viewer"],
      scopes: ["read", "write"],
      authenticated: true,
    });
  });

  it("reads namespaced claims as keys and nested claims as dotted paths", () => {
    const names = claimNames("      groups: https://example.com/groups\n      roles: realm_access.roles\n      user_type: app.meta.tier\n");
    const principal = principalFromClaims(
      { sub: "bob", "https://example.com/groups": ["ml"], realm_access: { roles: ["admin"] }, app: { meta: { tier: "staff" } } },
      names,
    );
    expect(principal.groups).toEqual(["ml"]);
    expect(principal.roles).toEqual(["admin"]);
    expect(principal.userType).toBe("staff");
  });

  it("treats missing and ill-typed claims as absent, and numbers as text", () => {
    const names = claimNames("      user_type: tier\n");
    expect(principalFromClaims({ sub: 42, tier: { nested: true }, groups: [1, "", " ml ", null, "ml"], roles: 7, scope: ["a", 3] }, names)).toEqual({
      consumer: "42",
      userType: undefined,
      groups: ["1", "ml"],
      roles: [],
      scopes: ["a", "3"],
      authenticated: true,
    });
    expect(principalFromClaims({}, names)).toEqual({ consumer: undefined, userType: undefined, groups: [], roles: [], scopes: [], authenticated: true });
  });

  it("claimValue prefers the exact key, then walks dots, and stops at non-objects", () => {
    expect(claimValue({ "a.b": 1, a: { b: 2 } }, "a.b")).toBe(1);
    expect(claimValue({ a: { b: 2 } }, "a.b")).toBe(2);
    expect(claimValue({ a: ["x"] }, "a.0")).toBeUndefined();
    expect(claimValue({ a: "text" }, "a.length")).toBeUndefined();
    expect(claimValue({ a: 1 }, "")).toBeUndefined();
  });
});
