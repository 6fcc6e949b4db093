/** The `auth:` section: where the caller's identity comes from (trusted proxy headers, bearer JWTs or gateway API keys). */
import { type Static, Type } from "@sinclair/typebox";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";
import type { AuthMode } from "../../core/pipeline/caller-auth.ts";

export const AuthSchema = Section(
  {
    mode: Type.Union([Type.Literal("none"), Type.Literal("proxy"), Type.Literal("oauth2"), Type.Literal("api_key")], {
      default: "none",
      description: "none, proxy (identity from headers injected upstream), oauth2 (Bearer JWT) or api_key (keys issued by /-/keys)",
    }),
    proxy: Section(
      {
        groups_header: Type.String({ default: "", description: "Header listing the caller's groups, comma-separated in one header (sent twice: 400)" }),
        roles_header: Type.String({ default: "", description: "Header listing the caller's roles (likewise)" }),
        scopes_header: Type.String({ default: "", description: "Header listing the caller's scopes (likewise)" }),
      },
      "Identity headers injected upstream (comma-separated)",
    ),
    oauth2: Section(
      {
        issuer: Type.String({ default: "", description: "Expected issuer" }),
        audience: Type.String({ default: "", description: "Expected audience" }),
        jwks_url: Type.String({ default: "", description: "JWKS address of the issuer" }),
        keys: Type.Array(Type.Record(Type.String(), Type.Unknown()), { default: [], description: "Inline JWKs (instead of jwks_url)" }),
        clock_skew: Duration("30s", "Accepted clock skew"),
        claims: Section(
          {
            consumer: Type.String({ default: "sub", description: "Claim naming the consumer" }),
            user_type: Type.String({ default: "", description: "Claim carrying the user type" }),
            groups: Type.String({ default: "groups", description: "Claim listing groups" }),
            roles: Type.String({ default: "roles", description: "Claim listing roles" }),
            scopes: Type.String({ default: "scope", description: "Claim listing scopes" }),
          },
          "Claim names",
        ),
      },
      "Bearer JWT verification",
    ),
    api_key: Section(
      {
        secret: Type.String({
          default: "",
          description:
            'HMAC secret for stored key hashes (typically "${GATEWAY_API_KEY_SECRET}"); required in api_key mode; set in another mode, /-/keys is served so keys can be issued before switching',
        }),
        cache_ttl: Duration("5s", "In-process key lookup cache; also the bound for a revoked or disabled key to stop on every replica"),
        stale_if_error: Duration(
          "0s",
          "While the key store cannot answer: how long past cache_ttl a key found before is still served from the cache (0s: refused with 503); a revocation made meanwhile applies once the store answers",
        ),
      },
      "Gateway-issued API keys (docs/api-keys.md)",
    ),
  },
  "Caller identity",
);

export type AuthConfig = Static<typeof AuthSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    auth: AuthConfig;
  }
  interface ConfigFacts {
    /** `auth.mode`: how callers are named (rules that need an authenticated principal read it). */
    authMode: AuthMode;
  }
}

/** api_key mode without a secret is refused at start (GW_CONFIG_INVALID): stored key hashes are HMACs under it. */
export const authSection: ConfigSection<typeof AuthSchema> = {
  key: "auth",
  schema: AuthSchema,
  validate: (auth) =>
    auth.mode === "api_key" && auth.api_key.secret === ""
      ? ["auth.api_key.secret: required in api_key mode (the HMAC secret stored key hashes are made with; e.g. ${GATEWAY_API_KEY_SECRET})"]
      : [],
  facts: (auth) => ({ authMode: auth.mode }),
};
