/**
 * The `rate_limits:` section (service_type -> user_type -> limits) and the per-service limits:
 * the sync concurrency cap and its priority reserve, and the per user type token budgets.
 */
import { type Static, Type } from "@sinclair/typebox";
import { durationMs } from "../../core/config/duration.ts";
import { Duration } from "../../core/config/schema-parts.ts";
import type { ConfigFacts, ConfigSection, SectionFieldSet, ServiceFieldSet } from "../../core/config/schema.ts";

const noPrices = "a cost budget needs prices: set pricing.models (or pricing.backend_models), or remove cost_rate";

/** Some model has a price, as the pricing plugin states it (absent where that plugin is not installed: none has). */
const pricingOn = (facts: Partial<ConfigFacts>): boolean => facts.pricingOn === true;

export const RateLimitSchema = Type.Object(
  {
    rate: Type.Integer({ minimum: 0, default: 0, description: "Requests per period; 0 = unlimited" }),
    period: Duration("1m", "Request window"),
    token_rate: Type.Integer({ minimum: 0, default: 0, description: "LLM prompt + completion tokens per token_period; 0 = off" }),
    token_period: Duration("1m", "Token window"),
    max_concurrent: Type.Integer({ minimum: 0, default: 0, description: "Pending + processing async jobs per consumer; 0 = off" }),
    processing_time: Type.Integer({ minimum: 0, default: 0, description: "Inference seconds (integer) per processing_period; 0 = off" }),
    processing_period: Duration("1h", "Processing-time window"),
    cost_rate: Type.Number({
      minimum: 0,
      default: 0,
      description: "Cost in pricing.currency per cost_period (LLM responses and async jobs, priced by `pricing`); 0 = off",
    }),
    cost_period: Duration("24h", "Cost window"),
  },
  { additionalProperties: false, default: {} },
);

export const RateLimitsSchema = Type.Record(Type.String(), Type.Record(Type.String(), RateLimitSchema, { default: {} }), {
  default: {},
  description: 'service_type -> user_type (or "*") -> limits',
  notes: [
    'A map of service type -> user type (or `"*"`, the fallback) -> limits; empty = no limits. A `period`, `token_period`,',
    "`processing_period` or `cost_period` must be positive when its rate is set; `cost_rate` needs prices in `pricing` (see [Cost](cost.md)).",
    "",
    "```yaml",
    "rate_limits:",
    "  llm:",
    "    premium: { rate: 600, period: 1m, token_rate: 200000, token_period: 1h, cost_rate: 25.00, cost_period: 24h }",
    '    "*":     { rate: 60, period: 1m }',
    "```",
  ].join("\n"),
});

export const TokenLimitSchema = Type.Object(
  {
    token_rate: Type.Integer({ minimum: 0, default: 0, description: "Prompt + completion tokens per window; 0 = off" }),
    token_period: Duration("1m", "Token window"),
    cost_rate: Type.Number({ minimum: 0, default: 0, description: "Cost in pricing.currency per cost_period for this model; 0 = off" }),
    cost_period: Duration("24h", "Cost window"),
  },
  { additionalProperties: false, default: {} },
);

export const LimitServiceFields = Type.Object({
  max_concurrent_sync: Type.Integer({ minimum: 0, default: 0, description: "Cluster-wide cap on simultaneous sync requests for the model; 0 = unlimited" }),
  priority_reserved_sync: Type.Integer({
    minimum: 0,
    default: 0,
    description: "Slots of max_concurrent_sync reserved for priority requests; must not exceed max_concurrent_sync",
  }),
  token_limits: Type.Record(Type.String(), TokenLimitSchema, {
    default: {},
    description: "Per user type token and cost budgets for this model: {USER_TYPE: {token_rate, token_period, cost_rate, cost_period}}",
  }),
});

export type RateLimitConfig = Static<typeof RateLimitSchema>;
export type TokenLimitConfig = Static<typeof TokenLimitSchema>;

declare module "../../core/config/schema.ts" {
  interface ConfigSections {
    rate_limits: Static<typeof RateLimitsSchema>;
  }
  interface ServiceFields extends Static<typeof LimitServiceFields> {}
}

export const rateLimitsSection: ConfigSection<typeof RateLimitsSchema> = {
  key: "rate_limits",
  schema: RateLimitsSchema,
  validate: (rateLimits, _config, facts) => {
    const problems: string[] = [];
    for (const [type, byUserType] of Object.entries(rateLimits)) {
      for (const [userType, limits] of Object.entries(byUserType)) {
        const at = `rate_limits.${type}.${userType}`;
        if (limits.rate > 0 && durationMs(limits.period) === 0) problems.push(`${at}.period: must be positive when rate is set`);
        if (limits.token_rate > 0 && durationMs(limits.token_period) === 0) problems.push(`${at}.token_period: must be positive when token_rate is set`);
        if (limits.processing_time > 0 && durationMs(limits.processing_period) === 0) {
          problems.push(`${at}.processing_period: must be positive when processing_time is set`);
        }
        if (limits.cost_rate > 0 && durationMs(limits.cost_period) === 0) problems.push(`${at}.cost_period: must be positive when cost_rate is set`);
        if (limits.cost_rate > 0 && !pricingOn(facts)) problems.push(`${at}.cost_rate: ${noPrices}`);
      }
    }
    return problems;
  },
};

export const limitServiceFields: ServiceFieldSet<typeof LimitServiceFields> = {
  schema: LimitServiceFields,
  validate: (service, at, _config, facts) => [
    ...(service.priority_reserved_sync > service.max_concurrent_sync
      ? [`${at}.priority_reserved_sync: must not exceed max_concurrent_sync (${service.max_concurrent_sync})`]
      : []),
    ...Object.entries(service.token_limits)
      .filter(([, limits]) => limits.cost_rate > 0 && !pricingOn(facts))
      .map(([userType]) => `${at}.token_limits.${userType}.cost_rate: ${noPrices}`),
  ],
};

export const BudgetReserveFields = Type.Object(
  {
    reserve_token_budgets: Type.Boolean({
      default: false,
      description:
        "Token budgets hold what each LLM request in flight may use (its prompt size plus max_tokens, or 1024 output tokens when unset) from admission until its answer is counted, so concurrent requests cannot all pass on the same room, as dollar budgets always do; false = the spec's behaviour (a request is judged by what earlier answers used)",
    }),
  },
  { notes: "See [Budgets under concurrency](limits.md#budgets-under-concurrency) for `reserve_token_budgets`." },
);

/** `llm.reserve_token_budgets`: this plugin's field in the LLM proxy's `llm` section. */
export const budgetReserveFields: SectionFieldSet<typeof BudgetReserveFields> = { section: "llm", schema: BudgetReserveFields };
