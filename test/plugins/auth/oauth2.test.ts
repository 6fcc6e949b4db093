/** Bearer JWT verification in-process: inline keys, a JWKS endpoint behind the injected fetch, and start refusals. */
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type JWK, SignJWT } from "jose";
import { ManualClock } from "../../../core/clock.ts";
import { JWKS_REFETCH_COOLDOWN_MS } from "../../../plugins/auth/key-source.ts";
import { newSigningKey, type SigningKey, signToken, type TokenOptions } from "../../support/jwt.ts";
import { type AccessRuntime, accessRuntime } from "../access-harness.ts";

const ISSUER = "https://idp.test/";
const AUDIENCE = "inference-gateway";
const services = `
server:
  consumer_header: X-Consumer
  user_type_header: X-User-Type
services:
  - type: chat
    model: open
    operations: {chat: [/v1/chat/completions]}
`;

const oauth2Config = (source: string, extra = "") =>
  `${services}
auth:
  mode: oauth2
  oauth2:
    issuer: ${ISSUER}
    audience: ${AUDIENCE}
    clock_skew: 30s
${source}
    claims:
      user_type: tier
${extra}`;

const inlineKeys = (...jwks: JWK[]) => `    keys: ${JSON.stringify(jwks)}`;

let key: SigningKey;
let other: SigningKey;
beforeAll(async () => {
  [key, other] = await Promise.all([newSigningKey("key-1"), newSigningKey("key-1")]);
});

const open: AccessRuntime[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(open.splice(0).map((r) => r.close()));
});
async function start(yaml: string, options: Parameters<typeof accessRuntime>[1] = {}): Promise<AccessRuntime> {
  const runtime = await accessRuntime(yaml, options);
  open.push(runtime);
  return runtime;
}

const chat = (rt: AccessRuntime, headers: Record<string, string> = {}) => rt.request("/v1/chat/completions", { headers, body: { model: "open" } });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function tokenFor(rt: AccessRuntime, signer: SigningKey, claims: Record<string, unknown>, options: TokenOptions = {}) {
  return await signToken(signer, claims, { issuer: ISSUER, audience: AUDIENCE, now: rt.clock.now(), ...options });
}

async function expectRejected(response: Response, description: string) {
  expect(response.status).toBe(401);
  expect(response.headers.get("www-authenticate")).toBe(`Bearer error="invalid_token", error_description="${description}"`);
  expect(await response.json()).toEqual({ error: { message: `invalid bearer token: ${description}`, type: "authentication_error", code: "unauthorized" } });
}

describe("auth.mode oauth2 with inline keys", () => {
  it("takes the principal from a valid token's claims; identity headers cannot override it", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    const token = await tokenFor(rt, key, { sub: "alice", tier: "premium", groups: ["ml"], roles: "admin, ops", scope: "chat:write models:read" });
    const response = await chat(rt, { ...bearer(token), "x-consumer": "mallory", "x-user-type": "enterprise" });
    expect(response.status).toBe(200);
    expect((await response.json()).principal).toEqual({
      consumer: "alice",
      user_type: "premium",
      groups: ["ml"],
      roles: ["admin", "ops"],
      scopes: ["chat:write", "models:read"],
      authenticated: true,
    });
  });

  it("ignores blank identity headers: the token names the caller, so the core's header checks do not refuse them", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    const response = await chat(rt, { ...bearer(await tokenFor(rt, key, { sub: "alice", tier: "premium" })), "x-consumer": "", "x-user-type": " " });
    expect(response.status).toBe(200);
    expect((await response.json()).principal).toMatchObject({ consumer: "alice", user_type: "premium" });
  });

  it("a token without the user type claim leaves the user type unset, whatever the header says", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    const response = await chat(rt, { ...bearer(await tokenFor(rt, key, { sub: "alice" })), "x-user-type": "enterprise" });
    expect((await response.json()).principal).toMatchObject({ consumer: "alice", user_type: null });
  });

  it("refuses a valid token whose consumer claim is missing or empty, naming the claim and its config key", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    const description = "the token names no consumer: its sub claim is missing or empty (auth.oauth2.claims.consumer names the consumer claim)";
    await expectRejected(await chat(rt, { ...bearer(await tokenFor(rt, key, { tier: "premium" })), "x-consumer": "alice" }), description);
    await expectRejected(await chat(rt, bearer(await tokenFor(rt, key, { sub: " " }))), description);
    // Another claim named as the consumer: the message names that one.
    const byEmail = await start(oauth2Config(inlineKeys(key.jwk)).replace("      user_type: tier", "      user_type: tier\n      consumer: email"));
    await expectRejected(
      await chat(byEmail, bearer(await tokenFor(byEmail, key, { sub: "alice" }))),
      "the token names no consumer: its email claim is missing or empty (auth.oauth2.claims.consumer names the consumer claim)",
    );
    expect((await (await chat(byEmail, bearer(await tokenFor(byEmail, key, { email: "a@x.test" })))).json()).principal).toMatchObject({ consumer: "a@x.test" });
  });

  it("accepts tokens without a consumer when auth.oauth2.claims.consumer is empty (every caller anonymous)", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)).replace("      user_type: tier", '      user_type: tier\n      consumer: ""'));
    const response = await chat(rt, bearer(await tokenFor(rt, key, { sub: "alice", tier: "premium" })));
    expect(response.status).toBe(200);
    expect((await response.json()).principal).toMatchObject({ consumer: null, user_type: "premium", authenticated: true });
  });

  it("answers 401 with a Bearer challenge for a missing or non-Bearer Authorization header", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    await expectRejected(await chat(rt), "missing bearer token; send Authorization: Bearer <JWT>");
    await expectRejected(await chat(rt, { authorization: "Basic dXNlcjpwYXNz", "x-consumer": "alice" }), "the Authorization header is not Bearer <JWT>");
  });

  it("accepts a token expired within clock_skew and refuses one expired beyond it", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    const nowSeconds = Math.floor(rt.clock.now() / 1000);
    const recent = await tokenFor(rt, key, { sub: "alice" }, { expiresAt: nowSeconds - 20, now: rt.clock.now() - 3_600_000 });
    expect((await chat(rt, bearer(recent))).status).toBe(200);
    const old = await tokenFor(rt, key, { sub: "alice" }, { expiresAt: nowSeconds - 40, now: rt.clock.now() - 3_600_000 });
    await expectRejected(await chat(rt, bearer(old)), "the token has expired");
    // The injected clock is the gateway's notion of now: the valid token expires when it moves.
    const fresh = await tokenFor(rt, key, { sub: "alice" });
    rt.clock.advance(3_600_000 + 31_000);
    await expectRejected(await chat(rt, bearer(fresh)), "the token has expired");
  });

  it("refuses a token not valid yet, a wrong audience or issuer, and one without exp", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    const later = Math.floor(rt.clock.now() / 1000) + 120;
    await expectRejected(await chat(rt, bearer(await tokenFor(rt, key, { sub: "a" }, { notBefore: later }))), "the token is not valid yet (nbf)");
    await expectRejected(
      await chat(rt, bearer(await tokenFor(rt, key, { sub: "a" }, { audience: "another-api" }))),
      "the token audience (aud) is not this gateway's audience",
    );
    await expectRejected(
      await chat(rt, bearer(await tokenFor(rt, key, { sub: "a" }, { issuer: "https://evil.test/" }))),
      "the token issuer (iss) is not the configured issuer",
    );
    const noExp = await new SignJWT({ sub: "a" }).setProtectedHeader({ alg: "RS256", kid: key.kid }).setIssuer(ISSUER).setAudience(AUDIENCE).sign(
      key.privateKey,
    );
    await expectRejected(await chat(rt, bearer(noExp)), "the token has no exp claim");
  });

  it("accepts a token for several audiences when one is ours", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    expect((await chat(rt, bearer(await tokenFor(rt, key, { sub: "a" }, { audience: ["other", AUDIENCE] })))).status).toBe(200);
  });

  it("refuses a wrong signature, an unknown kid, a symmetric algorithm and garbage", async () => {
    const rt = await start(oauth2Config(inlineKeys(key.jwk)));
    await expectRejected(await chat(rt, bearer(await tokenFor(rt, other, { sub: "a" }))), "the token signature does not verify");
    await expectRejected(
      await chat(rt, bearer(await tokenFor(rt, other, { sub: "a" }, { kid: "key-9" }))),
      "no key of the key set matches the token (check its kid and alg)",
    );
    const hmac = await new SignJWT({ sub: "a" })
      .setProtectedHeader({ alg: "HS256", kid: key.kid })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode("a-shared-secret-of-at-least-32-bytes!"));
    await expectRejected(await chat(rt, bearer(hmac)), "the token algorithm is not supported");
    await expectRejected(await chat(rt, bearer("not.a.jwt")), "the token is not a well-formed signed JWT");
  });
});

describe("auth.mode oauth2 with a JWKS endpoint", () => {
  function jwksServer(initial: JWK[]) {
    const state = { keys: initial, fetches: 0, fail: undefined as undefined | "network" | "status" };
    const fetchImpl: typeof fetch = async (input) => {
      expect(String(input)).toBe("https://idp.test/.well-known/jwks.json");
      state.fetches++;
      if (state.fail === "network") throw new TypeError("fetch failed: connection refused");
      if (state.fail === "status") return new Response("down", { status: 502 });
      return Response.json({ keys: state.keys });
    };
    return { state, fetchImpl };
  }
  const remote = oauth2Config("    jwks_url: https://idp.test/.well-known/jwks.json");

  it("fetches the key set once through the injected fetch and caches it", async () => {
    const jwks = jwksServer([key.jwk]);
    const rt = await start(remote, { fetch: jwks.fetchImpl });
    const token = await tokenFor(rt, key, { sub: "alice" });
    expect((await chat(rt, bearer(token))).status).toBe(200);
    expect((await chat(rt, bearer(token))).status).toBe(200);
    expect(jwks.state.fetches).toBe(1);
  });

  it("picks up a rotated key: an unknown kid refetches the set once the cooldown has passed", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const jwks = jwksServer([key.jwk]);
    const rt = await start(remote, { fetch: jwks.fetchImpl });
    expect((await chat(rt, bearer(await tokenFor(rt, key, { sub: "alice" })))).status).toBe(200);
    const rotated = await newSigningKey("key-2");
    jwks.state.keys = [rotated.jwk];
    const token = await tokenFor(rt, rotated, { sub: "alice" });
    // Within the cooldown an unknown kid does not hit the issuer again.
    await expectRejected(await chat(rt, bearer(token)), "no key of the key set matches the token (check its kid and alg)");
    expect(jwks.state.fetches).toBe(1);
    vi.setSystemTime(Date.now() + JWKS_REFETCH_COOLDOWN_MS + 1);
    expect((await chat(rt, bearer(token))).status).toBe(200);
    expect(jwks.state.fetches).toBe(2);
  });

  it("answers 503 (not 401) when the key set cannot be fetched, and logs why", async () => {
    for (const fail of ["network", "status"] as const) {
      const jwks = jwksServer([key.jwk]);
      jwks.state.fail = fail;
      const rt = await start(remote, { fetch: jwks.fetchImpl });
      const response = await chat(rt, bearer(await tokenFor(rt, key, { sub: "alice" })));
      expect(response.status, fail).toBe(503);
      expect(response.headers.get("www-authenticate")).toBeNull();
      const body = (await response.json()) as { error: { message: string } };
      expect(body.error.message).toMatch(/^cannot verify bearer tokens right now \(.+\); retry later$/);
      expect(rt.lines.some((l) => l.event === "auth_keys_unavailable" && l.jwks_url === "https://idp.test/.well-known/jwks.json")).toBe(true);
    }
  });
});

describe("auth.mode proxy", () => {
  const proxy = `${services}
auth:
  mode: proxy
  proxy:
    groups_header: X-Groups
    roles_header: X-Roles
    scopes_header: X-Scopes
`;

  it("reads consumer and user type from the server headers and groups, roles, scopes from the proxy headers", async () => {
    const rt = await start(proxy);
    const response = await chat(rt, { "x-consumer": "alice", "x-user-type": "premium", "x-groups": "ml, ops", "x-roles": "admin", "x-scopes": "read write" });
    expect((await response.json()).principal).toEqual({
      consumer: "alice",
      user_type: "premium",
      groups: ["ml", "ops"],
      roles: ["admin"],
      scopes: ["read", "write"],
      authenticated: true,
    });
  });

  it("leaves a caller without identity headers anonymous, and never answers 401", async () => {
    const rt = await start(proxy);
    const response = await chat(rt);
    expect(response.status).toBe(200);
    expect((await response.json()).principal).toEqual({ consumer: null, user_type: null, groups: [], roles: [], scopes: [], authenticated: false });
  });
});

describe("auth start refusals", () => {
  const refusal = async (yaml: string) => {
    try {
      await start(yaml);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error("the runtime started");
  };

  it("oauth2 needs jwks_url or keys, not both, and public asymmetric keys", async () => {
    expect(await refusal(oauth2Config(""))).toContain("auth.oauth2: set jwks_url (the issuer's JWKS endpoint) or keys (inline public JWKs)");
    expect(await refusal(oauth2Config(`    jwks_url: https://idp.test/jwks\n${inlineKeys(key.jwk)}`))).toContain(
      "auth.oauth2.keys: set either jwks_url or keys, not both",
    );
    expect(await refusal(oauth2Config("    jwks_url: idp.test/jwks"))).toContain(
      'auth.oauth2.jwks_url: must be an http:// or https:// URL, got "idp.test/jwks"',
    );
    expect(await refusal(oauth2Config(inlineKeys({ kty: "oct", k: "c2VjcmV0" })))).toContain("auth.oauth2.keys[0]: symmetric (oct) keys are not accepted");
    expect(await refusal(oauth2Config(inlineKeys(key.jwk, { ...key.jwk, d: "private" })))).toContain(
      'auth.oauth2.keys[1]: is a private key; give only its public part (no "d")',
    );
    expect(await refusal(oauth2Config(inlineKeys({ n: "x" } as JWK)))).toContain("auth.oauth2.keys[0].kty: required");
  });

  it("policies need the auth plugin, even when it is switched off by name", async () => {
    const yaml = `${services}\nauth:\n  mode: proxy\nplugins:\n  auth: false\npolicies:\n  rules: []\n`;
    expect(await refusal(yaml)).toBe('plugin "policies" depends on "auth", which is disabled; enable it or turn "policies" off');
  });

  it("warns when issuer or audience is left empty, since such tokens are then not checked", async () => {
    const rt = await start(`${services}\nauth:\n  mode: oauth2\n  oauth2:\n${inlineKeys(key.jwk)}\n`);
    expect(rt.lines.filter((l) => l.event === "auth_oauth2_unchecked_claim").map((l) => l.field)).toEqual(["auth.oauth2.issuer", "auth.oauth2.audience"]);
  });

  it("uses the injected clock for expiry", async () => {
    // By the system clock this token expired years ago.
    const clock = new ManualClock(Date.UTC(2020, 0, 1));
    const rt = await start(oauth2Config(inlineKeys(key.jwk)), { clock });
    const token = await tokenFor(rt, key, { sub: "alice" });
    expect((await chat(rt, bearer(token))).status).toBe(200);
  });
});
