/** The `policies:` section (absent = no policy step), which needs an authenticated principal. */
import { Type, type Static } from "@sinclair/typebox";
import { Duration, StringList } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

const PolicyRuleSchema = Type.Object(
  {
    match: Type.Object(
      {
        groups: StringList("Any of these groups"),
        roles: StringList("Any of these roles"),
        scopes: StringList("Any of these scopes"),
        consumers: StringList("Exactly one of these consumers"),
        user_types: StringList("Exactly one of these user types"),
      },
      { default: {}, additionalProperties: false },
    ),
    allow_models: StringList("Globs against the model alias"),
    allow_service_types: StringList("Globs against the service type (empty = any)"),
    limits: Type.Optional(
      Type.Object(
        {
          rate: Type.Integer({ minimum: 0, default: 0 }),
          period: Duration("1m", "Request window"),
          token_rate: Type.Integer({ minimum: 0, default: 0 }),
          token_period: Duration("1m", "Token window"),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const PoliciesSchema = Type.Optional(
  Type.Object(
    {
      default: Type.Union([Type.Literal("deny"), Type.Literal("allow")], { default: "deny" }),
      rules: Type.Array(PolicyRuleSchema, { default: [] }),
    },
    { additionalProperties: false, description: "Access policies (needs auth.mode)" },
  ),
);

export type PoliciesConfig = Static<typeof PoliciesSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    policies?: PoliciesConfig;
  }
}

export const policiesSection: ConfigSection<typeof PoliciesSchema> = {
  key: "policies",
  schema: PoliciesSchema,
  validate: (section, config) =>
    section && config.auth.mode === "none"
      ? ["policies: set, but auth.mode is none; set auth.mode to proxy or oauth2 (policies need an authenticated principal)"]
      : [],
};
