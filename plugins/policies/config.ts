/** The `policies:` section (absent = no policy step), which needs an authenticated principal. */
import { type Static, Type } from "@sinclair/typebox";
import { Duration, StringList } from "../../core/config/schema-parts.ts";
import type { ConfigSection } from "../../core/config/schema.ts";

const PolicyRuleSchema = Type.Object(
  {
    match: Type.Object(
      {
        groups: StringList("Matches when the caller is in any of these groups"),
        roles: StringList("Matches when the caller has any of these roles"),
        scopes: StringList("Matches when the caller has any of these scopes"),
        consumers: StringList("Matches when the consumer is exactly one of these"),
        user_types: StringList("Matches when the user type is exactly one of these"),
      },
      { default: {}, additionalProperties: false },
    ),
    allow_models: StringList('Globs against the model alias; empty grants nothing, "*" all'),
    allow_service_types: StringList("Globs against the service type (empty = any)"),
    limits: Type.Optional(
      Type.Object(
        {
          rate: Type.Integer({ minimum: 0, default: 0, description: "Per-member request quota per period; 0 = off" }),
          period: Duration("1m", "Request window"),
          token_rate: Type.Integer({ minimum: 0, default: 0, description: "Per-member token quota per token_period; 0 = off" }),
          token_period: Duration("1m", "Token window"),
        },
        { additionalProperties: false, description: "Optional quotas for each member the rule grants" },
      ),
    ),
  },
  { additionalProperties: false },
);

export const PoliciesSchema = Type.Optional(
  Type.Object(
    {
      default: Type.Union([Type.Literal("deny"), Type.Literal("allow")], { default: "deny", description: "allow disables enforcement" }),
      rules: Type.Array(PolicyRuleSchema, { default: [], description: "A request is allowed when one rule both matches and grants" }),
    },
    {
      additionalProperties: false,
      description: "Access policies (needs auth.mode)",
      notes: "Absent by default: no access control. When set, `auth.mode` must be `proxy` or `oauth2`. The non-empty fields of " +
        "a rule's `match` combine with AND; `match: {}` matches everyone.",
    },
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
  validate: (section, _config, facts) =>
    section && facts.authMode === "none"
      ? ["policies: set, but auth.mode is none; set auth.mode to proxy or oauth2 (policies need an authenticated principal)"]
      : [],
};
