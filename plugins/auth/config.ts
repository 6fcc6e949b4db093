/** The `auth:` section: where the caller's identity comes from (trusted proxy headers or bearer JWTs). */
import { Type, type Static } from "@sinclair/typebox";
import { Duration, Section } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

export const AuthSchema = Section(
  {
    mode: Type.Union([Type.Literal("none"), Type.Literal("proxy"), Type.Literal("oauth2")], { default: "none" }),
    proxy: Section(
      {
        groups_header: Type.String({ default: "" }),
        roles_header: Type.String({ default: "" }),
        scopes_header: Type.String({ default: "" }),
      },
      "Identity headers injected upstream (comma-separated)",
    ),
    oauth2: Section(
      {
        issuer: Type.String({ default: "" }),
        audience: Type.String({ default: "" }),
        jwks_url: Type.String({ default: "" }),
        keys: Type.Array(Type.Record(Type.String(), Type.Unknown()), { default: [], description: "Inline JWKs" }),
        clock_skew: Duration("30s", "Accepted clock skew"),
        claims: Section(
          {
            consumer: Type.String({ default: "sub" }),
            user_type: Type.String({ default: "" }),
            groups: Type.String({ default: "groups" }),
            roles: Type.String({ default: "roles" }),
            scopes: Type.String({ default: "scope" }),
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
