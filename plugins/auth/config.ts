/** The `auth:` section: where the caller's identity comes from (trusted proxy headers or bearer JWTs). */
import { Type, type Static } from "@sinclair/typebox";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const AuthSchema = Section(
  {
    mode: Type.Union([Type.Literal("none"), Type.Literal("proxy"), Type.Literal("oauth2")], {
      default: "none",
      description: "none, proxy (identity from headers injected upstream) or oauth2 (Bearer JWT)",
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
  },
  "Caller identity",
);

export type AuthConfig = Static<typeof AuthSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    auth: AuthConfig;
  }
}

export const authSection: ConfigSection<typeof AuthSchema> = { key: "auth", schema: AuthSchema };
